#!/usr/bin/env bash
# What a stranger who reaches the driver's port can make it spend (docs/security.md),
# each while the driver holds after its first result (PACKTUNE_TEST_HOLD), so that the hostile
# traffic provably comes while the run goes on; then the run is let go and must finish as usual:
#   - frames declared 1 GiB long on 4 connections, with keys and without: peak RSS under 200 MB;
#   - 300 clients with random CURVE keys: refused, logged in a bounded number of lines;
#   - idle connections under `ulimit -n 96`: refused with a line about connections, and the run
#     still writes best.json and its report;
#   - tcp on loopback without keys: one warning that every local user can join.
# The second argument is the stranger_peer program (stranger_peer.cpp).
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
hostile="${2:?usage: security_test.sh PACKTUNE STRANGER_PEER}"
# A held driver catches SIGTERM and sleeps on: a test that fails mid-way lets it go first.
trap 'rm -f "$work"/*.hold; cleanup_work' EXIT
[ -x "$hostile" ] || fail "no stranger_peer program at $hostile"

"$packtune" keys "$work/keys" > /dev/null
driver_key="$(cat "$work/keys/driver.pub")"
seed=$$

# start_held NAME EXTRA_JSON [ULIMIT_N]: a tiny run listening on tcp loopback ($port), held at
# its first result; sets $driver. heartbeat_seconds 10: the held driver's actor waits 300 s for
# its heartbeats, far beyond what the test holds it.
start_held() {
  local name="$1" extra="$2" fds="${3:-}"
  seed=$((seed + 17))
  port=$(free_port "$seed")
  tiny_config "$work/$name.json" "{\"listen\": \"tcp://127.0.0.1:$port\", \"heartbeat_seconds\": 10 $extra}"
  (
    if [ -n "$fds" ]; then ulimit -n "$fds"; fi
    PACKTUNE_TEST_HOLD="driver.result:$work/$name.hold" exec "$packtune" run "$work/$name.json" --out "$work/$name" --quiet
  ) > "$work/$name.out" 2>&1 &
  driver=$!
  pids+=("$driver")
  wait_held "$work/$name.hold" "$driver" || fail "$name: the driver ended before its first result" "$work/$name.out"
}

# wait_line FILE REGEX: until a line of FILE matches (the driver must stay alive meanwhile).
wait_line() {
  local file="$1" regex="$2" tries=0
  until grep -Eq "$regex" "$file" 2> /dev/null; do
    kill -0 "$driver" 2> /dev/null || fail "the driver ended before logging /$regex/" "$file"
    tries=$((tries + 1))
    [ "$tries" -lt 6000 ] || fail "no line /$regex/ in 10 minutes" "$file"  # bounds a hang only
    sleep 0.1
  done
}

peak_rss_mb() { awk '/^VmHWM:/ {print int($2 / 1024)}' "/proc/$driver/status"; }

# finish NAME: lets the held driver go; the run must end as a run does.
finish() {
  local name="$1"
  rm -f "$work/$name.hold"
  wait_for "$driver"
  [ "$code" = 0 ] || fail "$name: the run exited $code" "$work/$name.out"
  for f in best.json report.html results.jsonl; do
    [ -s "$work/$name/$f" ] || fail "$name: no $f" "$work/$name.out"
  done
  "$py" - "$work/$name" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/results.jsonl")]
assert {r["trial"] for r in rows} == {0, 1}, rows
PY
}

# 1. Without keys: big frames, and the loopback warning.
start_held open ""
"$hostile" big-frames 127.0.0.1 "$port" 4 NULL > "$work/open.hostile" || fail "open: a big frame was taken" "$work/open.hostile"
rss=$(peak_rss_mb)
[ "$rss" -lt 200 ] || fail "open: the driver's peak RSS is $rss MB after 4 frames of 1 GiB" "$work/open.hostile"
echo "without keys: peak RSS $rss MB after 4 frames declared 1 GiB"
finish open
# On the console: it comes before driver.log is opened.
warnings=$(grep -c "every user of this machine can connect" "$work/open.out" || true)
[ "$warnings" = 1 ] || fail "open: expected one loopback warning, got $warnings" "$work/open.out"

# 2. With keys: big frames in the CURVE handshake, then 300 random keys.
start_held keyed ", \"keys\": \"$work/keys\""
"$hostile" big-frames 127.0.0.1 "$port" 4 CURVE > "$work/keyed.hostile" || fail "keyed: a big frame was taken" "$work/keyed.hostile"
rss=$(peak_rss_mb)
[ "$rss" -lt 200 ] || fail "keyed: the driver's peak RSS is $rss MB after 4 frames of 1 GiB" "$work/keyed.hostile"
echo "with keys: peak RSS $rss MB after 4 frames declared 1 GiB"
started=$SECONDS
"$hostile" curve-keys "tcp://127.0.0.1:$port" "$driver_key" 300 > "$work/keys.hostile" ||
  fail "keyed: not every random key was refused" "$work/keys.hostile"
# Every refusal is counted: a line says 300 or more in all (the count comes at most 10 s late).
wait_line "$work/keyed/driver.log" "not in $work/keys/authorized_actors.*\(([3-9][0-9]{2}|[0-9]{4,}) in all"
elapsed=$((SECONDS - started))
lines=$(grep -c "whose CURVE key is not in" "$work/keyed/driver.log")
# At most a line at once and one per 10 s after it, however many keys came.
bound=$((2 + elapsed / 10))
[ "$lines" -le "$bound" ] && [ "$lines" -lt 300 ] ||
  fail "keyed: $lines refusal lines in $elapsed s for 300 keys (at most $bound)" "$work/keyed/driver.log"
echo "300 random keys: $lines refusal lines in $elapsed s"
finish keyed
if grep -q "every user of this machine" "$work/keyed.out"; then fail "keyed: a loopback warning with keys" "$work/keyed.out"; fi

# 3. Idle connections under a low descriptor limit: refused with a line about connections.
start_held fds "" 96
mkfifo "$work/stop"
"$hostile" connections 127.0.0.1 "$port" 200 < "$work/stop" > "$work/fds.hostile" 2>&1 &
crowd=$!
pids+=("$crowd")
exec 3> "$work/stop"
wait_line "$work/fds/driver.log" "too many connections"
rm -f "$work/fds.hold"
wait_for "$driver"
exec 3>&-
wait "$crowd" || fail "fds: stranger_peer failed" "$work/fds.hostile"
cat "$work/fds.hostile"
[ "$code" = 0 ] || fail "fds: the run exited $code" "$work/fds.out" "$work/fds/driver.log"
for f in best.json report.html; do [ -s "$work/fds/$f" ] || fail "fds: no $f" "$work/fds.out"; done
if grep -qi "cannot write\|disk full" "$work/fds.out"; then fail "fds: an unrelated error" "$work/fds.out"; fi
echo "1 passed, 0 failed: big frames refused, keys refused in $lines lines, connections capped"
