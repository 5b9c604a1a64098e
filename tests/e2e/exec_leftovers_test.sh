#!/usr/bin/env bash
# `packtune simulate --objective exec:CMD` leaves nothing of CMD behind: what CMD started is
# killed and reaped when simulate ends, even a process that called setsid (out of reach of a
# kill of CMD's process group); and a CMD that exits while such a process holds its stdout
# has exited, with its status, rather than "no answer" after --objective-timeout.
#   exec_leftovers_test.sh PACKTUNE
set -uo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

# A mark on the command line of what CMD leaves, unique to this run of the test, so that pgrep
# finds only that.
marker="packtune-exec-leftover-$$-$RANDOM"
leftovers() { pgrep -f -- "$marker"; }
# Whatever the test ends in, what escaped is killed, then $work is removed.
trap 'kill_matching "$marker"; cleanup_work' EXIT
escape="setsid sh -c 'sleep 300; : $marker' &"

# A CMD that answers every request, and starts a process that leaves its group on the way.
"$packtune" simulate --objective "exec:$escape while read l; do echo '{\"metric\": 0.5}'; done" \
  --tuner random --trials 2 --min-budget 1 --max-budget 1 > "$work/answered.out" 2>&1 ||
  fail "simulate with a CMD that answers" "$work/answered.out"
if left=$(leftovers); then
  fail "after simulate ended, what CMD started still runs: $(ps -o pid=,args= -p "${left//$'\n'/,}")"
fi
echo "ok   answered: nothing CMD started is left"

# A CMD that exits before answering while what it started holds its stdout: exit 1, one line
# naming its status. The timeout is never what ends the wait, however slow the machine.
"$packtune" simulate --objective "exec:$escape read l; exit 3" --objective-timeout 100000 \
  --tuner random --trials 2 --min-budget 1 --max-budget 1 > "$work/exited.out" 2> "$work/exited.err"
code=$?
[ "$code" -eq 1 ] && [ "$(wc -l < "$work/exited.err")" -eq 1 ] &&
  grep -qF "its output ended before an answer: it exited with status 3" "$work/exited.err" ||
  fail "simulate with a CMD that exits 3 ended with $code" "$work/exited.err"
if left=$(leftovers); then
  fail "after simulate failed, what CMD started still runs: $(ps -o pid=,args= -p "${left//$'\n'/,}")"
fi
echo "ok   exited: $(cat "$work/exited.err")"
