#!/usr/bin/env bash
# A run an older packtune recorded still resumes: one from before names had to be plain (a
# config file `my exp.json` named it "my exp") and before the config as run held the task and
# the data's format, normalisation, order and augmentation. Cut back to its first job, its journal
# naming it "my exp" without those keys, `--resume` finishes it under the plain form of the
# name, where a new run with that name is refused.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"

tiny_config "$work/c.json"
"$packtune" run "$work/c.json" --out "$work/out" --quiet > /dev/null
"$py" - "$work/out/journal.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
header = json.loads(lines[0])
header.pop("_seq"); header.pop("_crc")  # an older packtune sealed no line
header["config"]["name"] = "my exp"
header["config"].pop("task")
for key in ("format", "normalize", "augment", "order"):
    header["config"]["data"].pop(key)
open(sys.argv[1], "w").write(json.dumps(header) + "\n" + lines[1] + "\n")
PY
code=0
tiny_config "$work/named.json" '{"name": "my exp"}'
"$packtune" run "$work/named.json" --out "$work/new" > "$work/new.log" 2>&1 || code=$?
[ "$code" -eq 2 ] || fail "a new run named \"my exp\" exited $code, expected 2" "$work/new.log"
"$packtune" run --resume "$work/out" > "$work/resume.log" 2>&1 || fail "the old run did not resume" "$work/resume.log"
grep -q "finished my_exp" "$work/resume.log" || fail "the resumed run is not named my_exp" "$work/resume.log"
"$py" -c '
import json, sys
finals = {r["trial"] for r in map(json.loads, open(sys.argv[1])) if r["final"]}
assert finals == {0, 1}, f"final reports of trials {sorted(finals)}, expected 0 and 1"
' "$work/out/results.jsonl" || fail "the resumed run did not finish both trials" "$work/out/results.jsonl"
echo "1 passed, 0 failed: a run named \"my exp\" resumed as my_exp"
