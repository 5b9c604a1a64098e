#!/usr/bin/env bash
# A driver killed with kill -9 and resumed with `packtune run --resume DIR` ends with the
# reports of a run that was never interrupted (same trials, same promotions, the same metrics
# bit for bit), killed at three points: right after the first promotion (the first rung is over),
# in the middle of the sweep, and while an actor writes a checkpoint. Also: a killed actor is
# restarted and its trials resume; a driver stopped by SIGTERM keeps every checkpoint and
# resumes the same way; a second driver on a running experiment's folder is refused; resuming a
# finished experiment says so; a changed config is refused with the key named; a folder without
# a journal is refused.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

# One Hyperband sweep (eta 3, 0.25 to 2.25 epochs: 17 trials, 22 jobs) on a small slice, with
# a training recipe: a cosine schedule over budget.max after a warmup, label smoothing and
# clipping, so that promotions and resumes must land on the same point of each curve.
python3 - "$here/hyperband_sweep.json" "$work/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["model"].update({"lr_schedule": "cosine", "lr_warmup": 0.25, "label_smoothing": 0.1, "grad_clip_norm": 5.0})
json.dump(c, open(sys.argv[2], "w"))
PY

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

# Starts a run in $work/$1 that holds at the test point $2, kills the driver there with -9,
# resumes it (with the options $3...) and compares it with the reference.
kill_and_resume() {
  local name="$1" point="$2"
  shift 2
  PACKTUNE_TEST_HOLD="$point:$work/$name.hold" \
    "$packtune" run "$work/config.json" --out "$work/$name" --quiet > "$work/$name.out" 2>&1 &
  local driver=$!
  pids+=("$driver")
  if ! wait_held "$work/$name.hold" "$driver"; then
    echo "FAIL $name: the run never reached $point"; cat "$work/$name.out"; exit 1
  fi
  kill -9 "$driver"
  wait "$driver" 2>/dev/null || true
  no_actors_of "$driver" "$name"
  local before
  before="$(wc -l < "$work/$name/results.jsonl")"
  grep -q '"finished"' "$work/$name/journal.jsonl" && { echo "FAIL $name: killed after the end"; exit 1; }
  "$packtune" run --resume "$work/$name" "$@" > "$work/$name.resumed" 2>&1 || {
    echo "FAIL $name: resume failed"; cat "$work/$name.resumed"; exit 1; }
  grep -q "resuming" "$work/$name.resumed"
  echo "$name: killed at $point with $before report(s) written; resumed:"
  grep "resuming" "$work/$name.resumed"
  python3 "$compare" "$work/ref/results.jsonl" "$work/$name/results.jsonl" || {
    # Seen once in a busy suite (trials' first reports missing after a resume, not reproduced
    # since): what a diagnosis needs, since the work folder goes with the test.
    echo "FAIL $name: the resumed run's reports differ; its checkpoints, journal and driver log:"
    ls "$work/$name/checkpoints"
    cut -c1-400 "$work/$name/journal.jsonl"
    cat "$work/$name/driver.log"
    exit 1
  }
  cmp <(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["trial"])' "$work/ref/best.json") \
      <(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["trial"])' "$work/$name/best.json")
}

# Right after the first promotion (the first rung is over), once 30 of the 69 reports are
# written, and while an actor writes its fifth checkpoint (the file is written, not renamed).
kill_and_resume first_rung driver.promoted
# Mid-sweep, resumed on one actor instead of two: each actor keeps the threads the run chose
# (recorded in config.json), so the numbers stay the same bit for bit.
kill_and_resume mid_sweep "driver.reported#30" --actors 1
threads=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["threads_per_actor"])' "$work/mid_sweep/config.json")
grep -q "1 local actor(s) on cpu, $threads thread(s) each" "$work/mid_sweep.resumed" || {
  echo "FAIL: --resume --actors 1 did not keep $threads thread(s) per actor"; grep "thread(s) each" "$work/mid_sweep.resumed"; exit 1; }
kill_and_resume checkpoint "actor.checkpoint_tmp#5"

# Stopped with SIGTERM (what Ctrl-C and scancel send) mid-sweep: the driver stops with 130 and
# deletes no checkpoint (a finished run keeps only the best trials'; this one resumes from
# them all). While it runs, a second driver on the folder is refused before it touches it.
PACKTUNE_TEST_HOLD="driver.reported#30:$work/term.hold" \
  "$packtune" run "$work/config.json" --out "$work/term" --quiet > "$work/term.out" 2>&1 &
driver=$!
pids+=("$driver")
wait_held "$work/term.hold" "$driver" || { echo "FAIL term: the run ended before mid-sweep"; cat "$work/term.out"; exit 1; }
cp "$work/term/results.jsonl" "$work/term.results.before"
set +e
"$packtune" run --resume "$work/term" > "$work/second.out" 2>&1
second=$?
kill -TERM "$driver"
rm "$work/term.hold"  # lets the driver go on, to find the signal
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
mkdir -p "$work/nothing-here"
"$packtune" run --resume "$work/nothing-here" > "$work/none.out" 2>&1
none=$?
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["threads_per_actor"]=c["threads_per_actor"]+1; json.dump(c,open(sys.argv[2],"w"))' \
  "$work/first_rung/config.json" "$work/threads.json"
"$packtune" run "$work/threads.json" --resume "$work/first_rung" > "$work/threads.out" 2>&1
threads_code=$?
set -e
[ "$code" -eq 2 ] && grep -q "differs from the one the experiment ran with in seed;" "$work/changed.out" || {
  echo "FAIL: a changed seed was not refused"; cat "$work/changed.out"; exit 1; }
[ "$threads_code" -eq 2 ] && grep -q "differs from the one the experiment ran with in threads_per_actor;" "$work/threads.out" || {
  echo "FAIL: a change of threads_per_actor was not refused (exit $threads_code)"; cat "$work/threads.out"; exit 1; }
[ "$none" -eq 2 ] && grep -q "no journal.jsonl" "$work/none.out" || {
  echo "FAIL: a folder without a journal was not refused"; cat "$work/none.out"; exit 1; }
"$packtune" run "$work/config.json" --resume "$work/first_rung" --actors 1 > "$work/actors.out" 2>&1
grep -q "finished already" "$work/actors.out"

# An actor killed with -9 inside a long job (random search, 3 epochs each): its node restarts
# it, and the job resumes from the checkpoint checkpoint_every wrote inside it, nothing lost.
# One actor, one thread, no fused units; the reports are compared with the undisturbed run's.
# The actor holds right after it told the driver of its first checkpoint inside a job (jobs of
# 375 steps of width 256 last far longer than checkpoint_every on any machine).
python3 - "$work/config.json" "$work/long.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update({"seed": 8, "tuner": {"name": "random", "trials": 4}, "budget": {"unit": "epochs", "min": 3, "max": 3,
          "report_every": 0.25}, "checkpoint_every": 0.1, "threads_per_actor": 1, "fuse": "never", "max_pack": 2,
          "actors": 1})
c["data"]["train_size"] = 8000
c["model"].update({"depth": 2, "width": 256})
json.dump(c, open(sys.argv[2], "w"))
PY
"$packtune" run "$work/long.json" --out "$work/long_ref" --quiet > "$work/long_ref.out" 2>&1
PACKTUNE_TEST_HOLD="actor.checkpoint_inside:$work/actor.hold" \
  "$packtune" run "$work/long.json" --out "$work/actor_killed" > "$work/actor_killed.out" 2>&1 &
driver=$!
pids+=("$driver")
wait_held "$work/actor.hold" "$driver" || {
  echo "FAIL: no actor took a checkpoint inside a job"; cat "$work/actor_killed.out"; exit 1; }
# The held actor's job cannot end; once the driver has journaled its checkpoint, kill it.
python3 - "$work/actor_killed" <<'PY' || { echo "FAIL: the driver never journaled the checkpoint"; cat "$work/actor_killed.out"; exit 1; }
import json, sys, time
out = sys.argv[1]
for _ in range(3000):
    try:
        journal = [json.loads(l) for l in open(f"{out}/journal.jsonl") if l.strip()]
        final = {json.loads(l)["trial"] for l in open(f"{out}/results.jsonl") if l.strip() and json.loads(l)["final"]}
    except (OSError, ValueError):
        journal, final = [], set()
    if any("checkpoint" in e and e["checkpoint"]["budget"] < 3 and e["checkpoint"]["trial"] not in final
           for e in journal):
        sys.exit(0)
    time.sleep(0.1)
sys.exit(1)
PY
kill -9 "$(cat "$work/actor.hold")"
wait "$driver"
grep -q "restarting" "$work/actor_killed.out" || { echo "FAIL: the killed actor was not restarted"; cat "$work/actor_killed.out"; exit 1; }
grep "resumes from its checkpoint at budget" "$work/actor_killed/driver.log" || {
  echo "FAIL: no job resumed from a checkpoint inside it"; cat "$work/actor_killed.out"
  echo "checkpoints in the journal:"; grep '"checkpoint"' "$work/actor_killed/journal.jsonl" || true
  exit 1; }
python3 "$compare" "$work/long_ref/results.jsonl" "$work/actor_killed/results.jsonl"
echo "PASS"
