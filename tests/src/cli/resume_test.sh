#!/usr/bin/env bash
# A driver killed with kill -9 and resumed with `packtune run --resume DIR` ends with the
# reports of a run that was never interrupted (same trials, same promotions, metrics within
# 2e-3), killed at three points: right after the first promotion (the first rung is over),
# in the middle of the sweep, and while an actor writes a checkpoint. Also: a killed actor is
# restarted and its trials resume; a driver stopped by SIGTERM keeps every checkpoint and
# resumes the same way; a second driver on a running experiment's folder is refused; resuming a
# finished experiment says so; a changed config is refused with the key named; a folder without
# a journal is refused.
set -euo pipefail
packtune="$1"
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/background.sh"
command -v inotifywait > /dev/null || { echo "inotifywait not found: run scripts/setup.sh (inotify-tools)"; exit 1; }

# One Hyperband sweep (eta 3, 0.25 to 2.25 epochs: 17 trials, 22 jobs) on a small slice.
cp "$here/hyperband_sweep.json" "$work/config.json"

"$packtune" run "$work/config.json" --out "$work/ref" --quiet > "$work/ref.out" 2>&1

# No process of a killed driver may outlive it: its actors die with it.
no_actors_of() {
  for _ in $(seq 1 100); do
    pgrep -f "packtune-$1|$work/$2" > /dev/null || return 0
    sleep 0.1
  done
  echo "processes of the killed driver are left:"; pgrep -af "$work/$2" || true
  return 1
}

# Starts a run in $work/$1, waits until the command $2 says "now", kills the driver with -9,
# resumes it and compares it with the reference.
kill_and_resume() {
  local name="$1" when="$2"
  "$packtune" run "$work/config.json" --out "$work/$name" --quiet > "$work/$name.out" 2>&1 &
  local driver=$!
  pids+=("$driver")
  for _ in $(seq 1 600); do
    [ -d "$work/$name/checkpoints" ] && break
    sleep 0.05
  done
  if ! "$when" "$work/$name"; then
    echo "FAIL $name: the run ended before the point to kill it at"; cat "$work/$name.out"; exit 1
  fi
  kill -9 "$driver"
  wait "$driver" 2>/dev/null || true
  no_actors_of "$driver" "$name"
  rm -rf "/tmp/packtune-driver-$driver"  # the killed driver's work folder for its actors
  local before
  before="$(wc -l < "$work/$name/results.jsonl")"
  grep -q '"finished"' "$work/$name/journal.jsonl" && { echo "FAIL $name: killed after the end"; exit 1; }
  "$packtune" run --resume "$work/$name" > "$work/$name.resumed" 2>&1 || {
    echo "FAIL $name: resume failed"; cat "$work/$name.resumed"; exit 1; }
  grep -q "resuming" "$work/$name.resumed"
  echo "$name: killed with $before report(s) written; resumed:"
  grep "resuming" "$work/$name.resumed"
  python3 "$compare" "$work/ref/results.jsonl" "$work/$name/results.jsonl"
  cmp <(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["trial"])' "$work/ref/best.json") \
      <(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["trial"])' "$work/$name/best.json")
}

# After the first rung: the tuner's first promotion is in the journal.
after_first_rung() {
  for _ in $(seq 1 1200); do
    grep -q '"kind":"resume"' "$1/journal.jsonl" 2>/dev/null && return 0
    sleep 0.02
  done
  return 1
}
# Mid-sweep: 30 of the 69 reports are written.
mid_sweep() {
  for _ in $(seq 1 1200); do
    [ "$(wc -l 2>/dev/null < "$1/results.jsonl" || echo 0)" -ge 30 ] && return 0
    sleep 0.02
  done
  return 1
}
# While a checkpoint is being written: the fifth temporary checkpoint file appears.
writing_checkpoint() {
  timeout 60 inotifywait -q -m -e create --format '%f' "$1/checkpoints" 2> /dev/null |
    grep --line-buffered -m 5 '\.h5\.tmp-' > "$1.tmpfiles" || true
  [ "$(wc -l < "$1.tmpfiles")" -ge 5 ]
}

kill_and_resume first_rung after_first_rung
kill_and_resume mid_sweep mid_sweep
kill_and_resume checkpoint writing_checkpoint

# Stopped with SIGTERM (what Ctrl-C and scancel send) mid-sweep: the driver stops with 130 and
# deletes no checkpoint (a finished run keeps only the best trials'; this one resumes from
# them all). While it runs, a second driver on the folder is refused before it touches it.
"$packtune" run "$work/config.json" --out "$work/term" --quiet > "$work/term.out" 2>&1 &
driver=$!
pids+=("$driver")
mid_sweep "$work/term" || { echo "FAIL term: the run ended before mid-sweep"; cat "$work/term.out"; exit 1; }
cp "$work/term/results.jsonl" "$work/term.results.before"
set +e
"$packtune" run --resume "$work/term" > "$work/second.out" 2>&1
second=$?
kill -TERM "$driver"
wait "$driver"
code=$?
set -e
[ "$second" -eq 2 ] && grep -q "another packtune driver is running this experiment" "$work/second.out" || {
  echo "FAIL: a second driver on a running experiment's folder was not refused (exit $second)"; cat "$work/second.out"; exit 1; }
head -c "$(stat -c %s "$work/term.results.before")" "$work/term/results.jsonl" | cmp - "$work/term.results.before" || {
  echo "FAIL: the refused driver changed results.jsonl"; exit 1; }
[ "$code" -eq 130 ] || { echo "FAIL term: exit $code after SIGTERM, expected 130"; cat "$work/term.out"; exit 1; }
grep -q "all kept for --resume" "$work/term.out" || { echo "FAIL term: no 'all kept'"; cat "$work/term.out"; exit 1; }
"$packtune" run --resume "$work/term" > "$work/term.resumed" 2>&1
if grep -q "has no checkpoint to resume from" "$work/term.resumed"; then
  echo "FAIL term: the stop deleted checkpoints the resume needed"; grep "no checkpoint" "$work/term.resumed"; exit 1
fi
python3 "$compare" "$work/ref/results.jsonl" "$work/term/results.jsonl"

# Finished: nothing to do, and nothing changed.
cp "$work/mid_sweep/results.jsonl" "$work/finished.before"
"$packtune" run --resume "$work/mid_sweep" > "$work/again.out" 2>&1
grep -q "finished already" "$work/again.out"
cmp "$work/finished.before" "$work/mid_sweep/results.jsonl"

# A changed config is refused, naming what changed; where the actors are may change.
set +e
"$packtune" run "$work/config.json" --resume "$work/first_rung" --seed 6 > "$work/changed.out" 2>&1
code=$?
"$packtune" run --resume "$work/nothing-here" > "$work/none.out" 2>&1
none=$?
set -e
[ "$code" -eq 2 ] && grep -q "differs from the one the experiment ran with in seed;" "$work/changed.out" || {
  echo "FAIL: a changed seed was not refused"; cat "$work/changed.out"; exit 1; }
[ "$none" -eq 2 ] && grep -q "no journal.jsonl" "$work/none.out" || {
  echo "FAIL: a folder without a journal was not refused"; cat "$work/none.out"; exit 1; }
"$packtune" run "$work/config.json" --resume "$work/first_rung" --actors 1 > "$work/actors.out" 2>&1
grep -q "finished already" "$work/actors.out"

# An actor killed with -9 inside long jobs (random search, 3 epochs each): its node restarts
# it, and its jobs resume from the checkpoints checkpoint_every wrote inside them, nothing lost.
# One thread per actor and no fused units: the jobs run again on the other actor, and the
# reports are compared with the undisturbed run's.
python3 - "$work/config.json" "$work/long.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update({"seed": 8, "tuner": {"name": "random", "trials": 6}, "budget": {"unit": "epochs", "min": 3, "max": 3,
          "report_every": 0.25}, "checkpoint_every": 0.3, "threads_per_actor": 1, "fuse": "never", "max_pack": 2})
c["data"]["train_size"] = 8000
c["model"].update({"depth": 2, "width": 128})
json.dump(c, open(sys.argv[2], "w"))
PY
start=$(date +%s%N)
"$packtune" run "$work/long.json" --out "$work/long_ref" --quiet > "$work/long_ref.out" 2>&1
undisturbed=$((($(date +%s%N) - start) / 1000000))
start=$(date +%s%N)
"$packtune" run "$work/long.json" --out "$work/actor_killed" > "$work/actor_killed.out" 2>&1 &
driver=$!
pids+=("$driver")
# Kill slot 1's actor once a job it runs has a checkpoint_every checkpoint and no final report
# (its actor id is the order it joined in, not its slot). One python process polls: starting
# one per look was too slow to catch that window on a loaded machine.
python3 - "$work/actor_killed" <<'PY' || { echo "FAIL: the run ended before a job had a checkpoint inside it"; cat "$work/actor_killed.out"; exit 1; }
import json, re, sys, time
out = sys.argv[1]
deadline = time.time() + 120
while time.time() < deadline:
    time.sleep(0.02)
    try:
        log = open(out + ".out").read()
        rows = [json.loads(l) for l in open(f"{out}/results.jsonl")]
        journal = [json.loads(l) for l in open(f"{out}/journal.jsonl")]
    except (OSError, ValueError):
        continue
    if '"finished"' in open(f"{out}/journal.jsonl").read():
        sys.exit(1)
    m = re.search(r"actor (\d+) joined from .*slot 1\)", log)
    if not m:
        continue
    actor = int(m.group(1))
    mine = {r["trial"] for r in rows if r["actor"] == actor} - {r["trial"] for r in rows if r["final"]}
    inside = {e["checkpoint"]["trial"] for e in journal if "checkpoint" in e and e["checkpoint"]["budget"] < 3}
    if mine & inside:
        sys.exit(0)
sys.exit(1)
PY
pkill -9 -P "$driver" -f "packtune actor .*--local-index 1 " || {
  echo "FAIL: slot 1's actor was gone before it could be killed"; cat "$work/actor_killed.out"; exit 1; }
wait "$driver"
disturbed=$((($(date +%s%N) - start) / 1000000))
echo "undisturbed ${undisturbed} ms, with an actor killed ${disturbed} ms"
grep -q "restarting" "$work/actor_killed.out" || { echo "FAIL: the killed actor was not restarted"; cat "$work/actor_killed.out"; exit 1; }
grep "resumes from its checkpoint at budget" "$work/actor_killed.out" || {
  echo "FAIL: no job resumed from a checkpoint inside it"; cat "$work/actor_killed.out"
  echo "checkpoints in the journal:"; grep '"checkpoint"' "$work/actor_killed/journal.jsonl" || true
  exit 1; }
python3 "$compare" "$work/long_ref/results.jsonl" "$work/actor_killed/results.jsonl"
echo "PASS"
