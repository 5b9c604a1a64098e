#!/usr/bin/env bash
# `packtune report` on a real Hyperband run with fused packs (docs/report.md): the driver
# rewrites report.html while it runs and once at the end; the command writes the same page;
# headless Chromium opens it offline with no script error and every chart drawn with data
# (the page counts what plotly drew into a hidden element, read here from the DOM), and takes
# a screenshot. Bad input exits 2 with one line. Without chromium: skipped (exit 77).
set -euo pipefail
packtune="$1"
browser="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$browser" ]; then
  echo "SKIP: no chromium (Debian's chromium; scripts/setup.sh installs it)"
  exit 77
fi
work="$(mktemp -d)"
driver=""
trap '[ -n "$driver" ] && kill "$driver" 2> /dev/null; rm -rf "$work"' EXIT

# Long enough (several seconds of training) for the driver's rewrite every 5 s to happen once.
cat > "$work/config.json" <<'JSON'
{
  "name": "report_test",
  "seed": 3,
  "budget": {"unit": "epochs", "min": 0.25, "max": 2.25, "report_every": 0.25},
  "tuner": {"name": "hyperband", "eta": 3},
  "actors": 2,
  "max_pack": 4,
  "fuse": "always",
  "data": {"train_size": 12000, "validation_size": 500},
  "model": {"family": "mlp", "depth": 1, "batch_size": 64},
  "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.01},
            "width": {"type": "choice", "values": [32, 64]},
            "optimizer": {"type": "choice", "values": ["adam", "sgd"]}}
}
JSON
"$packtune" run "$work/config.json" --out "$work/out" --quiet > "$work/run.log" 2>&1 &
driver=$!
live=no
while kill -0 "$driver" 2> /dev/null; do
  if [ -f "$work/out/report.html" ] && grep -q 'http-equiv="refresh"' "$work/out/report.html"; then live=yes; fi
  sleep 0.2
done
wait "$driver" || { cat "$work/run.log"; exit 1; }
driver=""
[ "$live" = yes ] || { echo "FAIL: no report.html that reloads itself appeared during the run"; cat "$work/run.log"; exit 1; }
grep -q 'http-equiv="refresh"' "$work/out/report.html" && { echo "FAIL: the final report.html still reloads itself"; exit 1; }
cp "$work/out/report.html" "$work/driver.html"

"$packtune" report "$work/out" > "$work/report.log"
[ "$(cat "$work/report.log")" = "$work/out/report.html" ] || { echo "FAIL: report printed $(cat "$work/report.log")"; exit 1; }
cmp -s "$work/driver.html" "$work/out/report.html" || { echo "FAIL: the driver's last report.html differs from packtune report's"; exit 1; }
"$packtune" report "$work/out" --output "$work/copy.html" > /dev/null
cmp -s "$work/copy.html" "$work/out/report.html" || { echo "FAIL: --output wrote another page"; exit 1; }

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

/usr/bin/python3 - "$work" <<'PY'
import html.parser, json, sys
work = sys.argv[1]

class Check(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.inside, self.text = False, None
    def handle_starttag(self, tag, attrs):
        if dict(attrs).get("id") == "report-check":
            self.inside, self.text = True, ""
    def handle_endtag(self, tag):
        self.inside = False
    def handle_data(self, data):
        if self.inside:
            self.text += data

parser = Check()
parser.feed(open(f"{work}/dom.html", encoding="utf8").read())
assert parser.text, "the page wrote no #report-check: its script did not run to the end"
check = json.loads(parser.text)
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
