#!/usr/bin/env bash
# examples/torchscript as its README runs it, cut to a slice: export.py scripts torchvision's
# ResNet-18 and the small module beside a copy of the example, and its config, with the data cut
# to 2,000 images and the budgets to 0.25 to 0.75 epochs, trains both files through ASHA to a
# final test (the whole config, and what it was measured to take: examples/torchscript/README.md).
#   torchscript_example_test.sh PACKTUNE EXAMPLE_DIR
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
cp -r "$2" "$work/example"
rm -f "$work/example/"*.pt
"$py" "$work/example/export.py" > "$work/export.out" 2>&1 || fail "export.py" "$work/export.out"
grep -q "resnet18.pt: 11,172,810 parameters" "$work/export.out" || fail "no ResNet-18 of 11,172,810 parameters" "$work/export.out"
"$py" - "$work/example/fashion_mnist_torchscript.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["data"].update({"train_size": 2000, "validation_size": 500})
c["budget"] = {"unit": "epochs", "min": 0.25, "max": 0.75, "report_every": 0.25}
c["tuner"]["trials"] = 4
json.dump(c, open(sys.argv[1], "w"))
PY
(cd "$work/example" && "$packtune" run fashion_mnist_torchscript.json --out "$work/run" --quiet) > "$work/run.out" 2>&1 ||
  fail "the example's run" "$work/run.out"
grep -q "test: test_accuracy = " "$work/run.out" || fail "no final test" "$work/run.out"
"$py" - "$work/run/results.jsonl" <<'PY' || fail "the example's reports" "$work/run/results.jsonl"
import json, os, sys
files = {os.path.basename(json.loads(line)["config"]["path"]) for line in open(sys.argv[1])}
assert files == {"small.pt", "resnet18.pt"}, files
PY
echo "ok   export.py wrote both files; ASHA trained both to a final test"
