#!/bin/sh
# `packtune brackets` and `packtune simulate` end to end: exact output for known inputs, and
# one line on stderr with exit status 2 for bad input; `simulate --objective exec:CMD` with
# docs/tuners.md's example surrogate, against a table, and each way its command can fail.
#   tuning_commands_test.sh PACKTUNE SOURCE_DIR
set -eu
packtune=$1
source_dir=$2
py="${PACKTUNE_TEST_PYTHON:-/usr/bin/python3}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }

# --- brackets: the Hyperband paper's table ----------------------------------------------
expected='{"brackets":[{"s":4,"rungs":[{"n":81,"budget":1},{"n":27,"budget":3},{"n":9,"budget":9},{"n":3,"budget":27},{"n":1,"budget":81}]},{"s":3,"rungs":[{"n":34,"budget":3},{"n":11,"budget":9},{"n":3,"budget":27},{"n":1,"budget":81}]},{"s":2,"rungs":[{"n":15,"budget":9},{"n":5,"budget":27},{"n":1,"budget":81}]},{"s":1,"rungs":[{"n":8,"budget":27},{"n":2,"budget":81}]},{"s":0,"rungs":[{"n":5,"budget":81}]}]}'
got=$("$packtune" brackets --tuner hyperband --min-budget 1 --max-budget 81 --eta 3 --json)
[ "$got" = "$expected" ] || fail "brackets --json: $got"
"$packtune" brackets --tuner hyperband --min-budget 1 --max-budget 81 --eta 3 \
  | grep -q "bracket s=3: 34 x 3, 11 x 9, 3 x 27, 1 x 81" || fail "brackets text"

# --- simulate: ASHA with one worker follows the rule, job by job -------------------------
cat > "$work/table.csv" <<'CSV'
trial,budget,metric
0,1,0.5
1,1,0.8
2,1,0.3
3,1,0.9
0,2,0.45
1,2,0.85
2,2,0.2
3,2,0.7
0,4,0.4
1,4,0.9
2,4,0.1
3,4,0.75
CSV
"$packtune" simulate --objective "table:$work/table.csv" --tuner asha --eta 2 --min-budget 1 \
  --max-budget 4 --trials 4 --mode max --workers 1 --json > "$work/events.jsonl"
starts=$(grep '"event":"start"' "$work/events.jsonl" | sed 's/.*"trial":\([0-9]*\),"budget":\([0-9.]*\).*/t\1@\2/' | tr '\n' ' ')
[ "$starts" = "t0@1 t1@1 t1@2 t2@1 t3@1 t3@2 t1@4 " ] || fail "ASHA start order: $starts"
head -n 2 "$work/events.jsonl" | tr '\n' ' ' | grep -q \
  '^{"event":"start","trial":0,"budget":1,"t":0} {"event":"result","trial":0,"budget":1,"metric":0.5,"t":1} $' \
  || fail "event format: $(head -n 2 "$work/events.jsonl")"
tail -n 1 "$work/events.jsonl" | grep -q '"event":"summary".*"best_trial":1,' || fail "summary"

# A config file is enough, flags override it.
cat > "$work/config.json" <<'JSON'
{"tuner": {"name": "sha", "eta": 3}, "budget": {"min": 1, "max": 9}, "metric": "val_loss",
 "seed": 3, "space": {"lr": {"type": "loguniform", "low": 0.0001, "high": 0.1}},
 "data": {"ignored": "by simulate"}}
JSON
"$packtune" simulate "$work/config.json" --objective synthetic --workers 3 --json \
  | tail -n 1 | grep -q '"tuner":"sha".*"trials":9,"jobs":13,' || fail "simulate with a config"

# --- bad input: one line on stderr, exit status 2 ----------------------------------------
printf 'trial,budget,metric\n0,1\n' > "$work/bad.csv"
# expect_error STATUS WHAT ARGS...: packtune ARGS exits STATUS with one line on stderr naming WHAT.
expect_error() {
  wanted=$1
  what=$2
  shift 2
  set +e
  "$packtune" "$@" > /dev/null 2> "$work/stderr"
  status=$?
  set -e
  [ "$status" -eq "$wanted" ] || fail "$what: exit status $status, expected $wanted"
  [ "$(wc -l < "$work/stderr")" -eq 1 ] || fail "$what: stderr is not one line: $(cat "$work/stderr")"
  grep -q -- "$what" "$work/stderr" || fail "$what: not named in: $(cat "$work/stderr")"
}
expect_input_error() { expect_error 2 "$@"; }
expect_input_error "eta" brackets --min-budget 1 --max-budget 81 --eta 1
expect_input_error "min <= max" brackets --min-budget 5 --max-budget 1
expect_input_error "positive" brackets --min-budget 0 --max-budget 1
expect_input_error "positive" simulate --objective synthetic --tuner asha --min-budget -1 --max-budget 9 --trials 3
expect_input_error "tuner.eta" simulate --objective synthetic --tuner hyperband --max-budget 9 --eta 1
expect_input_error "--trials" simulate --objective synthetic --tuner asha --max-budget 9 --trials 0
expect_input_error "unknown tuner" simulate --objective synthetic --tuner nope --max-budget 9 --trials 3
expect_input_error "cannot open" simulate --objective "table:$work/missing.csv" --tuner asha --max-budget 9 --trials 3
expect_input_error "bad.csv:2" simulate --objective "table:$work/bad.csv" --tuner asha --max-budget 9 --trials 3
expect_input_error "no such file" simulate --objective synthetic --tuner asha --max-budget 9 --trials 3 --tuner-plugin "$work/none.so"
echo "tuning commands: ok"

# --- whole sweeps: a Hyperband config without trials runs one sweep in simulate, as in run;
# a limit that cuts a bracket short says so on stderr -----------------------------------
cat > "$work/sweep.json" <<'JSON'
{"budget": {"min": 0.25, "max": 2.25}, "tuner": {"name": "hyperband", "eta": 3},
 "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.1}}}
JSON
"$packtune" simulate "$work/sweep.json" --objective synthetic > "$work/sweep.out" 2> "$work/sweep.err"
grep -q "17 trials, 22 jobs" "$work/sweep.out" || fail "one whole sweep: $(cat "$work/sweep.out")"
[ ! -s "$work/sweep.err" ] || fail "a whole sweep warned: $(cat "$work/sweep.err")"
"$packtune" simulate "$work/sweep.json" --objective synthetic --trials 10 > "$work/cut.out" 2> "$work/cut.err"
grep -q "cuts a Hyperband sweep short: one sweep is 17 trials" "$work/cut.err" || fail "no warning for a cut sweep"
"$packtune" plan "$work/sweep.json" --actors 2x1GiB > "$work/plan.out" 2>&1 || fail "plan of a whole sweep: $(cat "$work/plan.out")"

# --- simulate --objective exec:CMD ---------------------------------------------------------
# The surrogate of docs/tuners.md, run as the documentation runs it (its python3 the tests'
# Python), prints what it shows.
sed -n '/^```python$/,/^```$/p' "$source_dir/docs/tuners.md" | sed '1d;$d' > "$work/surrogate.py"
[ -s "$work/surrogate.py" ] || fail "no python example in docs/tuners.md"
shown=$(sed -n '/^packtune simulate examples\/fashion_mnist.json --objective "exec:/,/^```$/p' "$source_dir/docs/tuners.md")
run=$(echo "$shown" | head -n 1 | sed "s|^packtune simulate examples/|simulate $source_dir/examples/|")
mkdir "$work/bin"
ln -s "$py" "$work/bin/python3"
(cd "$work" && PATH="$work/bin:$PATH" && eval "\"\$packtune\" $run") > "$work/example.out" \
  || fail "the documented exec example failed"
echo "$shown" | sed '1d;$d' > "$work/example.expected"
diff "$work/example.expected" "$work/example.out" || fail "docs/tuners.md shows other output than the example prints"

# A command answering from the table gives the table's run; with a cost of 10 s per budget
# every event comes 10 times as late.
asha="--tuner asha --eta 2 --min-budget 1 --max-budget 4 --trials 4 --workers 2 --report-every 1 --json"
surrogate="$py $source_dir/tests/tuners/simulate/table_surrogate.py $work/table.csv"
# shellcheck disable=SC2086
"$packtune" simulate --objective "table:$work/table.csv" $asha > "$work/by_table.jsonl"
# A timeout past what the clock counts (1e12 s) is no limit, not an overflow into the past.
# shellcheck disable=SC2086
"$packtune" simulate --objective "exec:$surrogate" $asha --objective-timeout 1e12 > "$work/by_exec.jsonl"
# shellcheck disable=SC2086
"$packtune" simulate --objective "exec:$surrogate 10" $asha > "$work/by_cost.jsonl"
without_objective() { sed 's/"objective":"[^"]*",//' "$1"; }
[ "$(without_objective "$work/by_exec.jsonl")" = "$(without_objective "$work/by_table.jsonl")" ] \
  || fail "exec answering from the table ran otherwise than the table"
"$py" - "$work/by_table.jsonl" "$work/by_cost.jsonl" <<'PY' || fail "costs did not set the time"
import json, sys
table, cost = ([json.loads(line) for line in open(path)] for path in sys.argv[1:])
for line in table:
    line.pop("objective", None)
    line["t" if "t" in line else "time"] *= 10
for line in cost:
    line.pop("objective", None)
assert table == cost, (table, cost)
PY

# A command that fails is one line naming it and exit status 1; bad input is exit status 2.
exec_fails() {
  what=$1
  command=$2
  shift 2
  expect_error 1 "$what" simulate --objective "exec:$command" --tuner random --max-budget 1 --trials 2 "$@"
  grep -qF -- "--objective exec:$command: trial " "$work/stderr" || fail "the command is not named: $(cat "$work/stderr")"
}
exec_fails "exited with status 3" "exit 3"
exec_fails "killed by signal 9" 'kill -9 $$'
exec_fails "trial 1 at budget 1: its output ended before an answer: it exited with status 0" \
  "read l; echo '{\"metric\": 0.5}'"
exec_fails "not a JSON object" "read l; echo hello"
exec_fails 'no finite number "metric"' "read l; echo '{\"cost\": 1}'"
exec_fails '"cost" is not a number of seconds >= 0' "read l; echo '{\"metric\": 0.5, \"cost\": -1}'"
# It never answers, so the timeout fires however fast or slow anything runs, and the command
# is gone when packtune has exited. Its pid file is renamed into place whole; a kill that came
# before leaves none, and then there is no pid to look for.
exec_fails "trial 0 at budget 1: no answer within 1 s" \
  "echo \$\$ > $work/pid.new; mv $work/pid.new $work/pid; exec sleep 1000" --objective-timeout 1
if [ -s "$work/pid" ]; then
  pid=$(cat "$work/pid")
  if kill -0 "$pid" 2> /dev/null; then fail "the command that timed out (pid $pid) still runs"; fi
fi
expect_input_error "exec:CMD" simulate --objective "exec:" --tuner random --max-budget 1 --trials 2
expect_input_error "table:FILE, synthetic or exec:CMD" simulate --objective "gaussian" --tuner random \
  --max-budget 1 --trials 2
expect_input_error "table:FILE, synthetic or exec:CMD" simulate --tuner random --max-budget 1 --trials 2
expect_input_error "--objective-timeout: expected a number of seconds > 0" simulate --objective exec:cat \
  --tuner random --max-budget 1 --trials 2 --objective-timeout 0
expect_input_error "--objective-timeout: only for --objective exec:CMD" simulate --objective synthetic \
  --tuner random --max-budget 1 --trials 2 --objective-timeout 5
echo "simulate exec: ok"
