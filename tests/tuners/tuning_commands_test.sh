#!/bin/sh
# `packtune brackets` and `packtune simulate` end to end: exact output for known inputs, and
# one line on stderr with exit status 2 for bad input.
#   tuning_commands_test.sh PACKTUNE
set -eu
packtune=$1
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
expect_input_error() {
  what=$1
  shift
  set +e
  "$packtune" "$@" > /dev/null 2> "$work/stderr"
  status=$?
  set -e
  [ "$status" -eq 2 ] || fail "$what: exit status $status, expected 2"
  [ "$(wc -l < "$work/stderr")" -eq 1 ] || fail "$what: stderr is not one line: $(cat "$work/stderr")"
  grep -q -- "$what" "$work/stderr" || fail "$what: not named in: $(cat "$work/stderr")"
}
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
