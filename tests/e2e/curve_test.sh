#!/usr/bin/env bash
# CURVE: a driver that listens where other machines can reach it needs keys (or an explicit
# "insecure": true); with keys it admits the actors it authorized and refuses, with a log line,
# an actor holding another key and a client sending garbage; the results are its own actors'.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

"$packtune" keys "$work/keys" > "$work/keys.out"
for f in driver.key driver.pub actor.key actor.pub authorized_actors; do test -s "$work/keys/$f"; done
[ "$(stat -c %a "$work/keys/driver.key")" = 600 ] && [ "$(stat -c %a "$work/keys/actor.key")" = 600 ]
if "$packtune" keys "$work/keys" > /dev/null 2> "$work/again.err"; then
  echo "FAILED: packtune keys overwrote existing keys"; exit 1
fi
grep -q "exists" "$work/again.err"
"$packtune" keys "$work/intruder" > /dev/null
# The intruder knows the driver's public key (it is public) but holds an actor key of its own.
cp "$work/keys/driver.pub" "$work/intruder/driver.pub"

port=$(free_port $$)
config() {  # $1: extra top-level members, each followed by a comma
  cat <<JSON
{
  "seed": 3, "listen": "tcp://0.0.0.0:$port", $1
  "budget": {"unit": "epochs", "max": 0.5, "report_every": 0.5},
  "tuner": {"name": "random", "trials": 2},
  "actors": 1,
  "data": {"train_size": 1024, "validation_size": 256},
  "model": {"family": "mlp", "depth": 1, "width": 32, "batch_size": 64, "optimizer": "sgd"},
  "space": {"lr": {"type": "loguniform", "low": 0.01, "high": 0.1}}
}
JSON
}

# Without keys: refused before any actor starts (exit 2), saying how to make keys.
config "" > "$work/open.json"
code=0
"$packtune" run "$work/open.json" --out "$work/open" --quiet > "$work/open.log" 2>&1 || code=$?
if [ "$code" != 2 ] || ! grep -q "packtune keys" "$work/open.log"; then
  echo "FAILED: without keys, expected exit 2 naming packtune keys; got $code:"; cat "$work/open.log"; exit 1
fi
[ ! -e "$work/open/logs" ] || { echo "FAILED: actors started without keys"; exit 1; }

# "insecure": true runs, and says what it risks.
config '"insecure": true,' > "$work/insecure.json"
"$packtune" run "$work/insecure.json" --out "$work/insecure" --quiet > "$work/insecure.log" 2>&1
grep -q "without authentication" "$work/insecure.log"

# With keys: the local actor connects with them. An actor with keys of its own, started
# first so that it knocks as soon as the driver listens, is refused.
"$packtune" actor --driver "tcp://127.0.0.1:$port" --keys "$work/intruder" --connect-timeout 60 \
  > "$work/intruder.log" 2>&1 &
intruder=$!
pids+=("$intruder")
# And a client that sends garbage as soon as the port opens.
"$py" - "$port" > "$work/garbage.log" 2>&1 <<'PY' &
import socket, sys, time
for _ in range(300):
    try:
        with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1) as s:
            s.sendall(b"\xff" + b"not a ZMTP greeting " * 50)
            time.sleep(0.5)
        print("sent"); break
    except OSError:
        time.sleep(0.05)
PY
garbage=$!
sleep 2  # LibTorch loaded and knocking before the driver listens
config "\"keys\": \"$work/keys\"," > "$work/keyed.json"
"$packtune" run "$work/keyed.json" --out "$work/keyed" > "$work/keyed.log" 2>&1
kill "$intruder" 2>/dev/null || true
wait "$intruder" 2>/dev/null || true
wait "$garbage" || true
grep -q sent "$work/garbage.log" || { echo "FAILED: the garbage client never reached the driver"; exit 1; }
if ! grep -q "failed the CURVE handshake" "$work/keyed.log"; then
  echo "FAILED: the driver did not log the garbage client:"; cat "$work/keyed.log"; exit 1
fi
if grep -q "connected to" "$work/intruder.log"; then echo "FAILED: the intruder was admitted"; cat "$work/intruder.log"; exit 1; fi
if ! grep -q "refused .*not in $work/keys/authorized_actors" "$work/keyed.log"; then
  echo "FAILED: the driver did not log the refusal:"; cat "$work/keyed.log"; exit 1
fi

"$py" - "$work/keyed" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/results.jsonl")]
assert {r["trial"] for r in rows} == {0, 1}, rows
assert {r["actor"] for r in rows} == {0}, "only the local actor trained"
print(f"1 passed, 0 failed: keys required, {len(rows)} reports from the authorized actor, the intruder refused")
PY
