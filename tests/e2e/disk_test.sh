#!/usr/bin/env bash
# Disks: an --out that cannot be written is refused before any actor starts (exit 2); a disk
# that fills mid-run (a 2 MiB tmpfs as --out) stops the experiment with one error line naming
# the path, results.jsonl keeps only whole lines, and after space is freed `--resume` ends the
# experiment as a run that never lacked space did. On a small volume (a 64 MiB tmpfs, under the
# 256 MiB a live report leaves free) a run that fits still gets its report.html. Needs root
# for a mount namespace (skipped, exit 77, without).
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2> /dev/null; then
  echo "SKIP: needs root and mount namespaces"; exit 77
fi

cp "$here/hyperband_sweep.json" "$work/config.json"
tiny_config "$work/tiny.json" '{"evaluate_test": false}'

# Not writable: a path through a file, and (below) a read-only mount.
set +e
"$packtune" run "$work/config.json" --out "$work/config.json/run" > "$work/through_file.out" 2>&1
code=$?
set -e
[ "$code" -eq 2 ] && grep -q "cannot create the directory" "$work/through_file.out" || {
  echo "FAIL: an --out through a file was not refused with exit 2"; cat "$work/through_file.out"; exit 1; }

"$packtune" run "$work/config.json" --out "$work/ref" --quiet > "$work/ref.out" 2>&1

mkdir -p "$work/small" "$work/readonly" "$work/medium"
# The mounts live and die with this namespace: nothing is left mounted whatever happens.
unshare -m --propagation private bash -euo pipefail -s "$packtune" "$work" <<'INNER'
packtune="$1"; work="$2"
mount -t tmpfs -o ro,size=1m tmpfs "$work/readonly"
set +e
"$packtune" run "$work/config.json" --out "$work/readonly/run" > "$work/readonly.out" 2>&1
code=$?
set -e
[ "$code" -eq 2 ] && grep -q "readonly/run: cannot" "$work/readonly.out" || {
  echo "FAIL: a read-only --out was not refused with exit 2"; cat "$work/readonly.out"; exit 1; }
[ ! -e "$work/readonly/run/logs" ] || { echo "FAIL: actors started on a read-only --out"; exit 1; }

mount -t tmpfs -o size=64m tmpfs "$work/medium"
"$packtune" run "$work/tiny.json" --out "$work/medium/run" > "$work/medium.out" 2>&1 || {
  echo "FAIL: a run on a 64 MiB volume"; cat "$work/medium.out"; exit 1; }
[ -s "$work/medium/run/report.html" ] && grep -q "charts: $work/medium/run/report.html" "$work/medium.out" || {
  echo "FAIL: no report.html on a 64 MiB volume with room for it"; df -h "$work/medium"; cat "$work/medium.out"; exit 1; }
echo "a 64 MiB volume: report.html written ($(stat -c %s "$work/medium/run/report.html") bytes)"

mount -t tmpfs -o size=2m tmpfs "$work/small"
set +e
"$packtune" run "$work/config.json" --out "$work/small/run" --quiet > "$work/full.out" 2> "$work/full.err"
code=$?
set -e
echo "a full disk: exit $code"; cat "$work/full.err"
[ "$code" -eq 1 ] || { echo "FAIL: a full disk did not stop the run with exit 1"; cat "$work/full.out"; exit 1; }
errors="$(grep -c "^packtune: error: " "$work/full.err")"
[ "$errors" -eq 1 ] && grep "^packtune: error: " "$work/full.err" | grep -q "$work/small/run" || {
  echo "FAIL: not one error line naming the path"; exit 1; }
python3 - "$work/small/run/results.jsonl" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
assert text == "" or text.endswith("\n"), "results.jsonl ends in a torn line"
rows = [json.loads(line) for line in text.splitlines()]
print(f"results.jsonl: {len(rows)} whole line(s) when the disk filled")
PY
# Space is freed: the experiment goes on from where it stopped.
mount -o remount,size=64m "$work/small"
"$packtune" run --resume "$work/small/run" > "$work/resumed.out" 2>&1 || {
  echo "FAIL: resume after freeing space"; cat "$work/resumed.out"; exit 1; }
grep "resuming" "$work/resumed.out"
cp "$work/small/run/results.jsonl" "$work/resumed.jsonl"
INNER
python3 "$compare" "$work/ref/results.jsonl" "$work/resumed.jsonl"
echo "PASS"
