#!/usr/bin/env bash
# The winner's test accuracy: after the run, best.json holds the best trial's final
# model evaluated on the test split, and it equals a forward pass of that checkpoint in NumPy
# on Fashion-MNIST's t10k files, normalised with the training slice's mean and std as the
# actor does. With "evaluate_test": false there is none.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
data="${PACKTUNE_DATA_DIR:-/usr/share/datasets/fashion-mnist}"

cat > "$work/config.json" <<'JSON'
{
  "seed": 5,
  "budget": {"unit": "epochs", "max": 1},
  "tuner": {"name": "random", "trials": 4},
  "actors": 2,
  "data": {"train_size": 3000, "validation_size": 1000},
  "model": {"family": "mlp", "depth": 2, "width": 64, "batch_size": 64, "optimizer": "adam"},
  "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.01}}
}
JSON
"$packtune" run "$work/config.json" --out "$work/out" > "$work/out.log" 2>&1 || { cat "$work/out.log"; exit 1; }
sed 's/"seed": 5,/"seed": 5, "evaluate_test": false,/' "$work/config.json" > "$work/off.json"
"$packtune" run "$work/off.json" --out "$work/off" --quiet > "$work/off.log" 2>&1 || { cat "$work/off.log"; exit 1; }

"$py" - "$work" "$data" <<'PY'
import gzip, json, os, sys
import h5py, numpy as np
work, data = sys.argv[1], sys.argv[2]

def idx(stem):
    for name in (stem + ".gz", stem):
        path = os.path.join(data, name)
        if os.path.exists(path):
            raw = (gzip.open if name.endswith(".gz") else open)(path, "rb").read()
            dims = raw[3]
            shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
            return np.frombuffer(raw, np.uint8, offset=4 + 4 * dims).reshape(shape)
    raise SystemExit(f"no {stem} in {data}")

best = json.load(open(f"{work}/out/best.json"))
test = best["test"]
assert test["trial"] == best["trial"] and test["budget"] == 1.0, best
assert 0.5 < test["test_accuracy"] <= 1.0 and test["test_loss"] > 0, test
log = open(f"{work}/out.log").read()
assert f"test_accuracy = {test['test_accuracy']:.4f}" in log, log

# The actor's normalisation: the training slice (the first 3,000 images), pixels / 255.
train = idx("train-images-idx3-ubyte")[:3000].astype(np.float32) / 255
mean, std = train.mean(), train.std(ddof=1)
x = (idx("t10k-images-idx3-ubyte").astype(np.float32) / 255 - mean) / std
x = x.reshape(len(x), -1)
y = idx("t10k-labels-idx1-ubyte").astype(np.int64)
with h5py.File(f"{work}/out/checkpoints/trial-{best['trial']}-budget-1.h5", "r") as f:
    layers = sorted({int(k.split(".")[0]) for k in f["model"]})
    weights = [(f["model"][f"{i}.weight"][()], f["model"][f"{i}.bias"][()]) for i in layers]
for i, (w, b) in enumerate(weights):
    x = x @ w.T + b
    if i + 1 < len(weights):
        x = np.maximum(x, 0)
accuracy = float((x.argmax(1) == y).mean())
shifted = x - x.max(1, keepdims=True)
loss = float(np.mean(np.log(np.exp(shifted).sum(1)) - shifted[np.arange(len(y)), y]))
assert abs(accuracy - test["test_accuracy"]) <= 2e-4, (accuracy, test)
assert abs(loss - test["test_loss"]) <= 1e-3, (loss, test)

off = json.load(open(f"{work}/off/best.json"))
assert "test" not in off, off
print(f"1 passed: trial {best['trial']} test_accuracy {test['test_accuracy']:.4f} "
      f"(NumPy {accuracy:.4f}), val_accuracy {best['value']:.4f}")
PY
