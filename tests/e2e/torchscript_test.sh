#!/usr/bin/env bash
# The torchscript family end to end (docs/models.md#torchscript-modules), on .pt files this test
# writes with Debian's python3-torch (tests/actors/torchscript_modules.py):
#  - every bad file, and a key that is neither a training key nor an attribute of the module (or
#    a value the attribute does not take), is one line on stderr and exit 2 from
#    `packtune run`, before any actor trains, and nothing is written to --out; a file gone bad
#    before `--resume` is refused the same way and the results folder is left as it was;
#  - a Hyperband sweep over two files (a `choice` of path, paths beside the config) with dropout
#    in the modules trains, promotes through checkpoints and tests the best trial; its report and
#    `packtune export` carry the path;
#  - that sweep killed with -9 right after its first promotion and resumed ends with the reports
#    of the uninterrupted run bit for bit, and the best trial's final checkpoint holds the same
#    parameters and buffers;
#  - pbt exploits between trials of one file (through the checkpoint store: they never share a
#    unit), with the same reports bit for bit whether the actor packs 4 trials or 1.
#   torchscript_test.sh PACKTUNE MODULES_SCRIPT
set -uo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
modules_script="$2"
"$py" "$modules_script" modules "$work/models" 28 || fail "writing the test's TorchScript files"

# config FILE MODEL_JSON SPACE_JSON: a Hyperband sweep (eta 3, 0.25 to 2.25 epochs: 17 trials)
# on a small slice, two actors.
config() {
  "$py" - "$1" "$2" "$3" <<'PY'
import json, sys
c = {"seed": 5, "budget": {"unit": "epochs", "min": 0.25, "max": 2.25, "report_every": 0.25},
     "tuner": {"name": "hyperband", "trials": 17, "eta": 3}, "actors": 2, "max_pack": 4,
     "threads_per_actor": 1, "actor_timeout_seconds": 600,
     "data": {"train_size": 1500, "validation_size": 500},
     "model": json.loads(sys.argv[2]), "space": json.loads(sys.argv[3])}
json.dump(c, open(sys.argv[1], "w"), indent=1)
PY
}

lr='{"lr": {"type": "loguniform", "low": 0.01, "high": 0.1}}'
refused() {  # refused FILE EXPECTED_TEXT: a run of models/FILE, the config beside it
  config "$work/models/bad-$1.json" "{\"family\": \"torchscript\", \"path\": \"$1\", \"optimizer\": \"sgd\", \"momentum\": 0.9, \"batch_size\": 64}" "$lr"
  one_line_error "$1" "model.path: $work/models/$1: $2" "$packtune" run "$work/models/bad-$1.json" --out "$work/out-$1"
}
refused missing.pt "no such file"
refused not_a_zip.pt "not a TorchScript file (not even a zip archive)"
refused pickled.pt "not a TorchScript file: a zip archive without TorchScript code"
refused newer.pt "saved by a newer PyTorch: its TorchScript file format is version 99, and LibTorch "
refused no_forward.pt "the module has no forward method"
refused throws.pt "its forward fails on a batch of shape [2, 1, 28, 28]: RuntimeError: shape '[-1, 7, 3]' is invalid"
refused wrong_shape.pt "its forward returns [2, 5] for a batch of shape [2, 1, 28, 28], but the data needs [2, 10]"
refused float64_output.pt "its forward returns Double outputs"
refused constant.pt "its output does not depend on its parameters"
# A bad file among the space's choices is found as well as a fixed one.
config "$work/models/bad-choice.json" '{"family": "torchscript", "batch_size": 64}' \
  '{"path": {"type": "choice", "values": ["small.pt", "wrong_shape.pt"]}}'
one_line_error choice "model.path: $work/models/wrong_shape.pt: its forward returns [2, 5]" \
  "$packtune" run "$work/models/bad-choice.json" --out "$work/out-choice"
config "$work/models/bad-key.json" '{"family": "torchscript", "path": "small.pt", "dropout": 0.2}' "$lr"
one_line_error key "model.dropout: neither a training key of model family torchscript nor an attribute of the module at $work/models/small.pt" \
  "$packtune" run "$work/models/bad-key.json" --out "$work/out-key"
config "$work/models/bad-attribute.json" '{"family": "torchscript", "path": "rated.pt"}' \
  '{"rate": {"type": "choice", "values": [0.1, "high"]}}'
one_line_error attribute "space.rate: the module at $work/models/rated.pt holds a float there, which takes no string value" \
  "$packtune" run "$work/models/bad-attribute.json" --out "$work/out-attribute"
config "$work/models/bad-nopath.json" '{"family": "torchscript"}' "$lr"
one_line_error nopath "model.path: model family torchscript needs the path of a TorchScript file" \
  "$packtune" run "$work/models/bad-nopath.json" --out "$work/out-nopath"
[ "$failures" -eq 0 ] || fail "$failures bad input(s) not refused as they should be"

# The sweep: two files chosen by the space, dropout inside the modules, SGD with momentum.
config "$work/models/sweep.json" \
  '{"family": "torchscript", "optimizer": "sgd", "momentum": 0.9, "batch_size": 64}' \
  '{"path": {"type": "choice", "values": ["dropout.pt", "wide.pt"]}, "lr": {"type": "loguniform", "low": 0.005, "high": 0.1}}'
"$packtune" run "$work/models/sweep.json" --out "$work/ref" --quiet > "$work/ref.out" 2>&1 || fail "the sweep" "$work/ref.out"
grep -q "test: test_accuracy = " "$work/ref.out" || fail "no test accuracy for the best trial" "$work/ref.out"
"$py" - "$work/ref" "$work/models" <<'PY' || fail "the sweep's results" "$work/ref.out"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1] + "/results.jsonl")]
paths = {r["config"]["path"] for r in rows}
assert paths == {sys.argv[2] + "/dropout.pt", sys.argv[2] + "/wide.pt"}, paths
assert all(r["unit_size"] == 1 for r in rows), "a torchscript trial was fused"
assert max(r["budget"] for r in rows) == 2.25, "no trial was promoted to budget.max"
best = json.load(open(sys.argv[1] + "/best.json"))
assert best["value"] > 0.5, best
print("sweep: %d reports, best trial %d: val_accuracy %.4f" % (len(rows), best["trial"], best["value"]))
PY
[ -s "$work/ref/report.html" ] || fail "no report.html"
"$packtune" export "$work/ref" --csv --output "$work/ref.csv" > /dev/null || fail "packtune export"
head -1 "$work/ref.csv" | grep -q "config.path" || fail "the export has no config.path column" "$work/ref.csv"

# A file that went bad before --resume: refused, and the results folder is left as it was.
cp -r "$work/ref" "$work/finished"
cp "$work/models/wide.pt" "$work/wide.pt.kept"
cp "$work/models/not_a_zip.pt" "$work/models/wide.pt"
before=$(cd "$work/finished" && find . -type f -exec sha256sum {} + | sort)
one_line_error gone_bad "model.path: $work/models/wide.pt: not a TorchScript file" \
  "$packtune" run --resume "$work/finished"
[ "$before" = "$(cd "$work/finished" && find . -type f -exec sha256sum {} + | sort)" ] ||
  fail "a refused --resume changed the results folder"
cp "$work/wide.pt.kept" "$work/models/wide.pt"
[ "$failures" -eq 0 ] || exit 1

# Killed with -9 right after the first promotion, then resumed.
PACKTUNE_TEST_HOLD="driver.promoted:$work/killed.hold" \
  "$packtune" run "$work/models/sweep.json" --out "$work/killed" --quiet > "$work/killed.out" 2>&1 &
driver=$!
pids+=("$driver")
wait_held "$work/killed.hold" "$driver" || fail "the run never reached its first promotion" "$work/killed.out"
kill -9 "$driver"
wait "$driver" 2> /dev/null
"$packtune" run --resume "$work/killed" > "$work/killed.resumed" 2>&1 || fail "the resume" "$work/killed.resumed"
grep -q "resuming" "$work/killed.resumed" || fail "it did not resume" "$work/killed.resumed"
"$py" "$compare" "$work/ref/results.jsonl" "$work/killed/results.jsonl" ||
  fail "the resumed run's reports differ from the uninterrupted run's" "$work/killed/driver.log"
"$py" - "$work/ref" "$work/killed" <<'PY' || fail "the best trial's final checkpoints differ"
import glob, json, sys
import h5py, numpy
best = json.load(open(sys.argv[1] + "/best.json"))
name = "trial-%d-budget-%g.h5" % (best["trial"], best["budget"])
with h5py.File(sys.argv[1] + "/checkpoints/" + name) as a, h5py.File(sys.argv[2] + "/checkpoints/" + name) as b:
    names = sorted(a["model"].keys())
    assert names == sorted(b["model"].keys()) and "bn.running_mean" in names, names
    for n in names:
        assert numpy.array_equal(a["model"][n][()], b["model"][n][()]), n
print("resumed: the best trial's %s holds the same %d tensors bit for bit" % (name, len(names)))
PY
echo "ok   killed after the first promotion and resumed: the same reports and final checkpoint bit for bit"

# pbt: a population of 4, exploiting every quarter epoch, packed 4 to an actor and one at a time.
"$py" - "$work/models/pbt.json" <<'PY'
import json, sys
json.dump({"seed": 5, "budget": {"unit": "epochs", "min": 0.25, "max": 1.25, "report_every": 0.25},
           "tuner": {"name": "pbt", "population": 4, "interval": 0.25, "perturb": ["lr", "momentum"]},
           "actors": 1, "threads_per_actor": 2, "data": {"train_size": 2048, "validation_size": 512},
           "model": {"family": "torchscript", "path": "dropout.pt", "batch_size": 64, "optimizer": "sgd"},
           "space": {"lr": {"type": "loguniform", "low": 0.002, "high": 0.2},
                     "momentum": {"type": "uniform", "low": 0.0, "high": 0.9}}}, open(sys.argv[1], "w"))
PY
"$packtune" run "$work/models/pbt.json" --out "$work/pbt" --quiet > "$work/pbt.out" 2>&1 || fail "pbt" "$work/pbt.out"
"$packtune" run "$work/models/pbt.json" --out "$work/pbt1" --max-pack 1 --quiet > "$work/pbt1.out" 2>&1 ||
  fail "pbt one at a time" "$work/pbt1.out"
exploits=$(grep -c '"exploit":' "$work/pbt/results.jsonl")
[ "$exploits" -ge 1 ] || fail "pbt exploited nothing" "$work/pbt/results.jsonl"
"$py" "$compare" "$work/pbt/results.jsonl" "$work/pbt1/results.jsonl" || fail "pbt packed 4 and 1 differ"
echo "ok   pbt: $exploits exploits through the checkpoint store, the same reports packed 4 or 1 to an actor"
