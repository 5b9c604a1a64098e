#!/usr/bin/env bash
# `packtune plan`: capacity is never exceeded, every trial that fits is placed, CPU actors
# take one unit each unless "mixed_packs" says otherwise and hold no fused unit before a
# profile says fusing pays (as a run does), the --actors grammar (1000xcuda=16GiB: 1,000
# GPU actors) holds, and bad actor specs and configs `run` refuses are input errors (exit 2).
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

cat > "$work/config.json" <<'JSON'
{
  "seed": 1,
  "budget": {"unit": "epochs", "max": 1},
  "tuner": {"name": "random", "trials": 40},
  "mixed_packs": "always",
  "data": {"train_size": 2000, "validation_size": 500},
  "model": {"family": "mlp", "depth": 2, "batch_size": 128, "optimizer": "sgd", "momentum": 0.9},
  "space": {
    "lr": {"type": "loguniform", "low": 0.001, "high": 0.1},
    "width": {"type": "choice", "values": [64, 256, 1024]},
    "family": {"type": "choice", "values": ["mlp", "cnn"]}
  }
}
JSON

check() {  # check PLAN.json EXPECT_ALL_PLACED [MAX_PACKS_PER_ACTOR]
"$py" - "$1" "$2" "${3:-0}" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
all_placed = sys.argv[2] == "1"
max_packs = int(sys.argv[3])
placed = []
for a in plan["actors"]:
    used = a["base_bytes"]
    if a["packs"]:
        # persistent memory of every pack plus the largest transient: what the actor holds
        used += sum(p["persistent_bytes"] for p in a["packs"]) + max(p["transient_bytes"] for p in a["packs"])
        assert used == a["estimated_bytes"], a
        assert a["estimated_bytes"] <= a["capacity_bytes"], a
    assert not max_packs or len(a["packs"]) <= max_packs, a
    for p in a["packs"]:
        assert p["fused"] == (len(p["members"]) > 1), p
        placed += p["members"]
unplaced = [u["trial"] for u in plan["unplaced"]]
assert len(placed) == len(set(placed)), "a trial placed twice"
assert sorted(placed + unplaced) == list(range(40)), (placed, unplaced)
if all_placed:
    assert not unplaced, plan["unplaced"]
for u in plan["unplaced"]:
    assert u["reason"], u
print(f"{len(placed)} placed, {len(unplaced)} unplaced")
PY
}

"$packtune" plan "$work/config.json" --actors 4x2GiB --max-pack 16 --json > "$work/roomy.json"
check "$work/roomy.json" 1
# mixed_packs auto (the default): a CPU actor holds one unit; the trials beyond wait.
grep -v mixed_packs "$work/config.json" > "$work/auto.json"
"$packtune" plan "$work/auto.json" --actors 4x2GiB --max-pack 16 --json > "$work/auto-plan.json"
check "$work/auto-plan.json" 0 1
grep -q '"reason":"waits for an actor to finish its unit' "$work/auto-plan.json"
if grep -q 'waits for room' "$work/auto-plan.json"; then echo "FAILED: a CPU actor's turn read as memory"; exit 1; fi
if grep -q '"fused":true' "$work/auto-plan.json"; then echo "FAILED: fused units on CPU actors before a profile"; exit 1; fi
# Output goes to a file before grep reads it: `plan | grep -q` under pipefail fails whenever
# grep has its line and exits before plan has written the rest (SIGPIPE).
"$packtune" plan "$work/auto.json" --actors 4x2GiB --max-pack 16 > "$work/auto.txt"
grep -q "^unplaced trial .*: waits for an actor to finish its unit" "$work/auto.txt"
"$packtune" plan "$work/config.json" --actors cpu=60MiB,cpu=80MiB --json > "$work/tight.json"
check "$work/tight.json" 0
grep -q '"reason":"waits for room' "$work/tight.json"
# A trial bigger than every actor says so.
"$packtune" plan "$work/config.json" --actors cpu=5MiB --json > "$work/tiny.json"
grep -q 'more than any actor has' "$work/tiny.json"
"$packtune" plan "$work/config.json" --actors 2x1GiB > "$work/two.txt"
grep -q "^actor 1" "$work/two.txt"

# COUNTxDEVICE=SIZE: a thousand GPU actors (planned as one actor of device "1000xcuda" before).
"$packtune" plan "$work/config.json" --actors 1000xcuda=16GiB --json > "$work/gpus.json"
"$py" - "$work/gpus.json" <<'PY'
import json, sys
actors = json.load(open(sys.argv[1]))["actors"]
assert len(actors) == 1000, len(actors)
assert all(a["device"] == "cuda" and a["capacity_bytes"] == 16 << 30 for a in actors), actors[0]
PY
"$packtune" plan "$work/config.json" --actors 2xcuda:1=8GiB,3x1GiB,cpu=600MiB > "$work/mixed.txt"
grep -q "on 6 actor(s)" "$work/mixed.txt"
grep -q "^actor 1 (cuda:1)" "$work/mixed.txt"
grep -q "^actor 4 (cpu)" "$work/mixed.txt"

# What `run` refuses before it starts, `plan` refuses too (validate): here the device.
sed 's/"seed": 1,/"seed": 1, "device": "tpu",/' "$work/config.json" > "$work/tpu.json"
set +e
"$packtune" plan "$work/tpu.json" > "$work/out" 2> "$work/err"
rc=$?
set -e
[ "$rc" = 2 ] && [ "$(wc -l < "$work/err")" = 1 ] && grep -q 'unknown device "tpu"' "$work/err" ||
  { echo "FAILED: plan of a config with device tpu exited $rc: $(cat "$work/err")"; exit 1; }

for spec in "cpu" "0x1GiB" "3xlots" "=1GiB" "cpu=-5MiB" "10xcuda=" "xcuda=16GiB" "0xcuda=1GiB" "1000001xcuda=1GiB" \
            "-4xcuda=1GiB" "99999999999999999999x1GiB" "4xcuda=16GiBs" "4xcuda=1GiB,"; do
  set +e
  "$packtune" plan "$work/config.json" --actors="$spec" > "$work/out" 2> "$work/err"
  rc=$?
  set -e
  [ "$rc" = 2 ] || { echo "FAILED: --actors $spec exited $rc"; exit 1; }
  [ "$(wc -l < "$work/err")" = 1 ] || { echo "FAILED: --actors $spec: $(cat "$work/err")"; exit 1; }
  grep -q "expected COUNT, COUNTxSIZE, COUNTxDEVICE, \[COUNTx\]DEVICE=SIZE" "$work/err" ||
    { echo "FAILED: --actors $spec: $(cat "$work/err")"; exit 1; }
done
echo "1 passed, 0 failed: plan --json keeps every actor within capacity"
