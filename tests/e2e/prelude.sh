# shellcheck shell=bash disable=SC2034
# (SC2034: $compare, $code and the rest are set here for the tests that source this.)
# Sourced by every end-to-end test in this folder, right after its `set` line:
#   source "$(dirname "$0")/prelude.sh" "$@"
# What the tests share, so each one holds only its own steps and assertions:
#   $packtune  the packtune binary, the test's first argument (checked here)
#   $here      this folder (the test's data: hyperband_sweep.json, compare_results.py, ...)
#   $work      a fresh folder, removed however the test ends (its profile-cache/ is the run's
#              $PACKTUNE_CACHE_DIR) (kept with KEEP_WORK=1, to look
#              into after a failure); a test may name where with work_template=TEMPLATE (for
#              mktemp -d) before sourcing
#   pids       the background processes to stop when the test ends
#   $compare   compare_results.py, which compares two results.jsonl report by report
#   $py        the Python the tests' checks run under, with h5py and numpy: Debian's
#              /usr/bin/python3 (not a venv's python3 on PATH), or $PACKTUNE_TEST_PYTHON where the
#              system has another (the GPU machine's image)
# and the helpers below: fail, private_net, free_port, wait_held, tiny_config, wait_listening,
# kill_matching, wait_for, one_line_error (which counts in $failures).

packtune="${1:-}"
if [ -z "$packtune" ] || [ ! -x "$packtune" ]; then
  echo "usage: $(basename "$0") PACKTUNE [...]: the packtune binary to test (got '${packtune}')"
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
compare="$here/compare_results.py"
py="${PACKTUNE_TEST_PYTHON:-/usr/bin/python3}"

work="$(mktemp -d ${work_template:+"$work_template"})"
echo "work: $work"
pids=()
# Each test its own throughput profile cache: one test's profiles must not decide whether
# another's run measures (docs/planner.md#the-profile-cache).
export PACKTUNE_CACHE_DIR="$work/profile-cache"
# The EXIT trap. A test with more to undo (namespaces, daemons) sets a trap of its own that
# calls this last, or removes $work itself.
cleanup_work() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"
}
trap cleanup_work EXIT

# fail MESSAGE [FILE...]: says what failed, shows the files that tell why, and ends the test.
fail() { echo "FAILED: $1"; shift; for f in "$@"; do echo "--- $f"; cat "$f"; done; exit 1; }

# A private 10.x.y prefix for a /24 of test addresses that no interface here uses, picked from
# `$1` (a pid), so that two runs of a test do not meet.
private_net() {
  local id="$1" net
  while :; do
    net="10.$((64 + id % 128)).$(((id / 128) % 256))"
    grep -qF " $net." <<< "$(ip -4 -o addr)" || break  # no pipe: grep -q would cut ip off (SIGPIPE)
    id=$((id + 7919))
  done
  echo "$net"
}

# free_port SEED: a port for a driver to listen on (the rule packtune-ssh uses).
source "$here/../../scripts/free_port.sh"

# wait_held FILE PID: waits until a process holds at a PACKTUNE_TEST_HOLD point (FILE holds
# its pid; include/packtune/test_hold.hpp), or fails if PID (the driver) ended first. No timing:
# it waits for the point however long the machine takes to get there.
wait_held() {
  local file="$1" pid="$2"
  until [ -s "$file" ]; do
    kill -0 "$pid" 2> /dev/null || { echo "FAIL: process $pid ended before it reached the hold ($file)"; return 1; }
    sleep 0.05
  done
}

# tiny_config FILE [JSON]: a small run (random search, 2 trials of half an epoch on 1,000
# images, one actor) with JSON's keys merged over it.
tiny_config() {
  local extra="${2:-}"
  [ -n "$extra" ] || extra='{}'
  python3 - "$1" "$extra" <<'PY'
import json, sys
c = {"seed": 3, "budget": {"unit": "epochs", "max": 0.5, "report_every": 0.25},
     "tuner": {"name": "random", "trials": 2}, "actors": 1, "max_pack": 1, "fuse": "never",
     "threads_per_actor": 1, "actor_timeout_seconds": 600,
     "data": {"train_size": 1000, "validation_size": 500},
     "model": {"family": "mlp", "depth": 1, "width": 32, "batch_size": 64, "optimizer": "adam"},
     "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.01}}}
c.update(json.loads(sys.argv[2]))
json.dump(c, open(sys.argv[1], "w"), indent=1)
PY
}

# kill_matching PATTERN: for a test's cleanup of processes that escaped what should have ended
# them: kills each whose command line matches PATTERN (pgrep -f; make it unique to the test), by
# its id, and its process group where it leads one (what it started).
kill_matching() {
  local pid
  for pid in $(pgrep -f -- "$1"); do kill -KILL -- "-$pid" "$pid" 2> /dev/null; done
}

# wait_for PID: waits for the background process PID and sets $code to its exit status.
# wait_listening PID SOCKET [FILE...]: until the driver PID has made its ipc SOCKET; fails,
# showing FILEs, if it ends first.
wait_listening() {
  until [ -S "$2" ]; do
    kill -0 "$1" 2>/dev/null || fail "the driver ended before it listened" "${@:3}"
    sleep 0.05
  done
}

wait_for() {
  code=0
  wait "$1" || code=$?
}

# one_line_error NAME EXPECTED_TEXT COMMAND...: COMMAND exits 2 with one stderr line holding
# EXPECTED_TEXT, and writes no $work/out-NAME; each that does not counts in $failures.
failures=0
one_line_error() {
  local name="$1" text="$2"
  shift 2
  "$@" > "$work/stdout" 2> "$work/stderr"
  local code=$? lines
  lines=$(wc -l < "$work/stderr")
  if [ "$code" -eq 2 ] && [ "$lines" -eq 1 ] && grep -qF -- "$text" "$work/stderr" && [ ! -e "$work/out-$name" ]; then
    echo "ok   $name: $(cat "$work/stderr")"
  else
    echo "FAIL $name: exit $code, $lines stderr line(s)"
    sed 's/^/    /' "$work/stderr"
    failures=$((failures + 1))
  fi
}
