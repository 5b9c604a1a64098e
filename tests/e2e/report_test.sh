#!/usr/bin/env bash
# `packtune report` on a real Hyperband run with fused packs (docs/report.md): the driver
# rewrites report.html while it runs and once at the end; the command writes the same page;
# headless Chromium opens it offline with no script error and every chart drawn with data
# (the page counts what plotly drew into a hidden element, read here from the DOM), and takes
# a screenshot. Bad input exits 2 with one line. Without chromium: skipped (exit 77).
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
browser="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$browser" ]; then
  echo "SKIP: no chromium (Debian's chromium; scripts/setup.sh installs it)"
  exit 77
fi

cat > "$work/config.json" <<'JSON'
{
  "name": "report_test",
  "seed": 3,
  "budget": {"unit": "epochs", "min": 0.25, "max": 2.25, "report_every": 0.25},
  "tuner": {"name": "hyperband", "eta": 3},
  "actors": 2,
  "max_pack": 4,
  "fuse": "always",
  "data": {"train_size": 8000, "validation_size": 500},
  "model": {"family": "mlp", "depth": 1, "batch_size": 64},
  "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.01},
            "width": {"type": "choice", "values": [32, 64]},
            "optimizer": {"type": "choice", "values": ["adam", "sgd"]}}
}
JSON
PACKTUNE_TEST_HOLD="actor.reported#3:$work/actor.hold" \
  "$packtune" run "$work/config.json" --out "$work/out" --quiet > "$work/run.log" 2>&1 &
driver=$!
pids+=("$driver")
# The live page, whatever the machine's speed: the first actor to send its third report holds
# there (PACKTUNE_TEST_HOLD, include/packtune/test_hold.hpp), so the run cannot end, until the
# driver has rewritten the page (every 5 s); then it is let go. The page must reload itself and
# hold the reports so far.
for _ in $(seq 1 3000); do
  [ -s "$work/actor.hold" ] && break
  sleep 0.1
done
[ -s "$work/actor.hold" ] || { echo "FAIL: no actor sent three reports"; cat "$work/run.log"; exit 1; }
live=no
for _ in $(seq 1 1200); do
  reports="$(grep -o '"reports":[0-9]*' "$work/out/report.html" 2> /dev/null | tail -1 | cut -d: -f2 || true)"
  if grep -q 'http-equiv="refresh"' "$work/out/report.html" 2> /dev/null && [ "${reports:-0}" -ge 3 ]; then
    live=yes
    break
  fi
  sleep 0.1
done
rm "$work/actor.hold"
wait "$driver" || { cat "$work/run.log"; exit 1; }
[ "$live" = yes ] || { echo "FAIL: no report.html with the reports so far that reloads itself during the run"; exit 1; }
grep -q 'http-equiv="refresh"' "$work/out/report.html" && { echo "FAIL: the final report.html still reloads itself"; exit 1; }
cp "$work/out/report.html" "$work/driver.html"

"$packtune" report "$work/out" > "$work/report.log"
[ "$(cat "$work/report.log")" = "$work/out/report.html" ] || { echo "FAIL: report printed $(cat "$work/report.log")"; exit 1; }
cmp -s "$work/driver.html" "$work/out/report.html" || { echo "FAIL: the driver's last report.html differs from packtune report's"; exit 1; }
"$packtune" report "$work/out" --output "$work/copy.html" > /dev/null
cmp -s "$work/copy.html" "$work/out/report.html" || { echo "FAIL: --output wrote another page"; exit 1; }
code=0
"$packtune" report "$work/out" --output "$work/out" > /dev/null 2> "$work/err" || code=$?
[ "$code" = 2 ] && [ "$(wc -l < "$work/err")" = 1 ] && grep -q "is a folder; give --output a file name" "$work/err" ||
  { echo "FAIL: report --output FOLDER: exit $code"; cat "$work/err"; exit 1; }

# Offline: nothing may be fetched, so the network is cut off (an unroutable proxy) as well.
chrome=("$browser" --headless --disable-gpu --no-sandbox --enable-unsafe-swiftshader --hide-scrollbars
        --user-data-dir="$work/chrome" --proxy-server=127.0.0.1:9 --virtual-time-budget=15000)
timeout 120 "${chrome[@]}" --dump-dom "file://$work/out/report.html" > "$work/dom.html" 2> "$work/chrome.log" ||
  { echo "FAIL: chromium --dump-dom"; tail -20 "$work/chrome.log"; exit 1; }
timeout 120 "${chrome[@]}" --window-size=1400,2400 --screenshot="$work/report.png" "file://$work/out/report.html" \
  > /dev/null 2>> "$work/chrome.log" || { echo "FAIL: chromium --screenshot"; tail -20 "$work/chrome.log"; exit 1; }
[ -n "${PACKTUNE_REPORT_SCREENSHOT:-}" ] && cp "$work/report.png" "$PACKTUNE_REPORT_SCREENSHOT"

# Bad input: no such directory, no results.jsonl, a damaged line. One line on stderr, exit 2.
mkdir "$work/empty" "$work/corrupt"
printf '{"trial": 0, "budget": 1}\nnot json\n' > "$work/corrupt/results.jsonl"
for dir in "$work/nowhere" "$work/empty" "$work/corrupt"; do
  code=0
  "$packtune" report "$dir" > /dev/null 2> "$work/err" || code=$?
  [ "$code" = 2 ] && [ "$(wc -l < "$work/err")" = 1 ] || { echo "FAIL: report $dir: exit $code"; cat "$work/err"; exit 1; }
done

"$py" - "$work" "$here" <<'PY'
import json, sys
work = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from page_check import read_check

check = read_check(open(f"{work}/dom.html", encoding="utf8").read(), "report-check")
assert check, "the page wrote no #report-check: its script did not run to the end"
assert check["errors"] == [], f"errors in the page: {check['errors']}"
charts = check["charts"]
expected = {"curves", "rungs", "timeline", "best", "parallel", "table"}
assert set(charts) == expected, f"charts drawn: {charts}"
empty = [name for name, points in charts.items() if not points > 0]
assert not empty, f"charts without data: {empty} ({charts})"
rows = [json.loads(l) for l in open(f"{work}/out/results.jsonl")]
trials = {r["trial"] for r in rows}
assert charts["table"] == len(trials), (charts, len(trials))
assert all("unit" in r and "job_start" in r for r in rows), "results.jsonl rows without unit or job_start"
png = open(f"{work}/report.png", "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50_000, f"screenshot of {len(png)} bytes"
print(f"1 passed, 0 failed: {len(trials)} trials, {len(rows)} reports; points drawn {charts}")
PY
