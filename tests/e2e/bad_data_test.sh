#!/usr/bin/env bash
# A user's own data (HDF5 and NumPy files) that cannot be trained on: `packtune run` and
# `packtune plan` each refuse it before any actor starts, with exit 2, one line on stderr naming
# the config key, the file and the dataset, and nothing in --out.
set -uo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
failures=0
passed=0

# make_data FOLDER PYTHON: runs PYTHON with np, h5py, d (the folder) and good(), which writes a
# good set: x.npy (200 rows of 8 float32 features), y.npy (int64 labels 0..9), the same as
# d.h5 (datasets x and y) and a test split (tx.npy, ty.npy, t.h5) of 20 rows.
make_data() {
  mkdir -p "$1"
  "$py" - "$1" "$2" <<'PY'
import sys
import h5py
import numpy as np
d = sys.argv[1]
def good():
    rng = np.random.default_rng(0)
    for stem, n in (("", 200), ("t", 20)):
        x = rng.standard_normal((n, 8)).astype(np.float32)
        y = (np.arange(n) % 10).astype(np.int64)
        np.save(f"{d}/{stem}x.npy", x)
        np.save(f"{d}/{stem}y.npy", y)
        with h5py.File(f"{d}/{stem or 'd'}.h5", "w") as f:
            f["x"], f["y"] = x, y
exec(sys.argv[2])
PY
}

npy='{"format": "npy", "x": "x.npy", "y": "y.npy", "test_x": "tx.npy", "test_y": "ty.npy"}'
h5='{"format": "hdf5", "path": "d.h5", "test_path": "t.h5"}'

# config FOLDER DATA_JSON [EXTRA_JSON]: a one-trial config beside the data (relative paths).
config() {
  "$py" - "$1/config.json" "$2" "${3:-{\}}" <<'PY'
import json, sys
c = {"seed": 1, "budget": {"unit": "steps", "max": 2}, "tuner": {"name": "random", "trials": 1}, "actors": 1,
     "data": json.loads(sys.argv[2]),
     "model": {"family": "mlp", "depth": 1, "width": 8, "batch_size": 16, "optimizer": "adam"}}
c.update(json.loads(sys.argv[3]))
json.dump(c, open(sys.argv[1], "w"))
PY
}

# expect NAME TEXT: `packtune run` and `packtune plan` of $work/NAME/config.json both refuse it
# with one line holding TEXT ($d stands for the folder), exit 2, and no --out.
expect() {
  local name="$1" d="$work/$1"
  local text="${2//\$d/$d}"
  local out="$work/out-$name"
  for command in run plan; do
    local args=("$command" "$d/config.json")
    [ "$command" = run ] && args+=(--out "$out")
    "$packtune" "${args[@]}" > "$work/stdout" 2> "$work/stderr"
    local code=$? lines
    lines=$(wc -l < "$work/stderr")
    if [ "$code" -ne 2 ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$text" "$work/stderr" || [ -e "$out" ]; then
      echo "FAIL $name ($command): exit $code, $lines stderr line(s), out exists: $([ -e "$out" ] && echo yes || echo no)"
      echo "    expected: $text"
      sed 's/^/    /' "$work/stderr"
      failures=$((failures + 1))
    else
      echo "ok   $name ($command): $(cat "$work/stderr")"
      passed=$((passed + 1))
    fi
  done
}

# The good sets pass: plan reads and checks them and plans the trial.
for format in npy h5; do
  make_data "$work/good-$format" 'good()'
  config "$work/good-$format" "${!format}"
  if "$packtune" plan "$work/good-$format/config.json" > "$work/stdout" 2> "$work/stderr"; then
    passed=$((passed + 1))
  else
    echo "FAIL good $format data: plan refused it"; cat "$work/stderr"; failures=$((failures + 1))
  fi
done

make_data "$work/missing_file" 'good(); import os; os.remove(f"{d}/ty.npy")'
config "$work/missing_file" "$npy"
expect missing_file 'data.test_y: $d/ty.npy: file not found'

make_data "$work/missing_dataset" 'good()'
config "$work/missing_dataset" '{"format": "hdf5", "path": "d.h5", "y": "labels"}'
expect missing_dataset 'data.y: $d/d.h5 dataset "labels": no such dataset'

make_data "$work/lengths" 'good(); np.save(f"{d}/y.npy", np.arange(150) % 10)'
config "$work/lengths" "$npy"
expect lengths 'data.y: $d/y.npy: 150 rows, but $d/x.npy has 200 samples'

make_data "$work/test_label" 'good()
with h5py.File(f"{d}/t.h5", "a") as f: f["y"][3] = 12'
config "$work/test_label" "$h5"
expect test_label 'data.test_path: $d/t.h5 dataset "y": label 12 in row 3 outside 0..9'

make_data "$work/negative_label" 'good()
with h5py.File(f"{d}/d.h5", "a") as f: f["y"][5] = -1'
config "$work/negative_label" "$h5"
expect negative_label 'data.y: $d/d.h5 dataset "y": label -1 in row 5 outside 0..9'

make_data "$work/nan" 'good(); x = np.load(f"{d}/x.npy"); x[42, 3] = np.nan; np.save(f"{d}/x.npy", x)'
config "$work/nan" "$npy"
expect nan 'data.x: $d/x.npy: NaN in row 42'

make_data "$work/inf_target" 'good()
with h5py.File(f"{d}/d.h5", "w") as f:
    f["x"] = np.ones((100, 4), np.float32); y = np.zeros(100, np.float32); y[9] = np.inf; f["y"] = y'
config "$work/inf_target" '{"format": "hdf5", "path": "d.h5"}' '{"task": "regression"}'
expect inf_target 'data.y: $d/d.h5 dataset "y": Inf in row 9'

make_data "$work/float64" 'good(); np.save(f"{d}/x.npy", np.load(f"{d}/x.npy").astype(np.float64))'
config "$work/float64" "$npy"
expect float64 'data.x: $d/x.npy: dtype <f8 unsupported; expected uint8 (images) or float32'

make_data "$work/rank" 'good(); np.save(f"{d}/x.npy", np.zeros((200, 2, 2, 2, 2), np.float32))'
config "$work/rank" "$npy"
expect rank 'data.x: $d/x.npy: rank 5 (shape (200, 2, 2, 2, 2)) unsupported'

make_data "$work/empty_file" 'good(); open(f"{d}/y.npy", "w").close()'
config "$work/empty_file" "$npy"
expect empty_file 'data.y: $d/y.npy: empty file (0 bytes)'

make_data "$work/no_samples" 'good()
with h5py.File(f"{d}/d.h5", "w") as f: f["x"] = np.zeros((0, 8), np.float32); f["y"] = np.zeros(0, np.int64)'
config "$work/no_samples" "$h5"
expect no_samples 'data.x: $d/d.h5 dataset "x": no samples (shape (0, 8))'

make_data "$work/test_shape" 'good(); np.save(f"{d}/tx.npy", np.zeros((20, 9), np.float32))'
config "$work/test_shape" "$npy"
expect test_shape "data.test_x: \$d/tx.npy: sample shape (9,) differs from the training split's (8,)"

# Messages that say what is true: a uint64 label as the file holds it, the HDF5 filter this
# HDF5 lacks (h5py's lzf is h5py's own), a .npy header that is not numpy's (strict parsing).
make_data "$work/uint64_label" 'good(); y = np.load(f"{d}/y.npy").astype(np.uint64); y[5] = np.iinfo(np.uint64).max; np.save(f"{d}/y.npy", y)'
config "$work/uint64_label" "$npy"
expect uint64_label 'data.y: $d/y.npy: label 18446744073709551615 in row 5 asks for more than the 100000 classes'
make_data "$work/lzf" 'good()
x = np.tile(np.arange(8, dtype=np.float32), (200, 1))  # lzf leaves data it cannot shrink uncompressed
with h5py.File(f"{d}/d.h5", "w") as f: f.create_dataset("x", data=x, compression="lzf"); f["y"] = np.load(f"{d}/y.npy")'
config "$work/lzf" "$h5"
expect lzf 'data.x: $d/d.h5 dataset "x": cannot read rows 0 to 200: the dataset is compressed with HDF5 filter lzf (id 32000), which this HDF5 library'
make_data "$work/npy_header" 'good()
raw = open(f"{d}/y.npy", "rb").read()
key = b"\x27shape\x27: (3,), "
end = raw.index(b"}")
padding = raw.index(b"\n") - raw.index(b"}") - 1  # the header keeps its length: fewer spaces
assert padding > len(key)
open(f"{d}/y.npy", "wb").write(raw[:end] + key + raw[end:end + 1 + padding - len(key)] + raw[raw.index(b"\n"):])'
config "$work/npy_header" "$npy"
expect npy_header "data.y: \$d/y.npy: malformed .npy header ('shape' given twice)"

# A data set larger than this machine's memory (a sparse file: its header says 1 TiB) is
# refused from the headers, before anything reads it.
make_data "$work/too_large" '
def sparse(name, shape):
    with open(f"{d}/{name}", "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": shape})
        f.truncate(f.tell() + 4 * int(np.prod(shape)))
sparse("x.npy", (1 << 26, 4096)); sparse("y.npy", (1 << 26,))'
config "$work/too_large" '{"format": "npy", "x": "x.npy", "y": "y.npy"}' '{"task": "regression"}'
expect too_large 'data: $d/x.npy: the data set takes 1048832 MiB in each actor'"'"'s memory'

# The config's side of the same: keys, values and the metric of a task.
make_data "$work/val_accuracy" 'good()'
config "$work/val_accuracy" "$npy" '{"task": "regression", "metric": "val_accuracy"}'
expect val_accuracy 'metric: val_accuracy needs task classification'
make_data "$work/crop" 'good()'
config "$work/crop" '{"format": "npy", "x": "x.npy", "y": "y.npy", "augment": {"crop_padding": 65}}'
expect crop 'data.augment.crop_padding: 65 is out of range; expected 0 to 64'
make_data "$work/other_format_key" 'good()'
config "$work/other_format_key" '{"format": "npy", "x": "x.npy", "y": "y.npy", "path": "d.h5"}'
expect other_format_key 'data.path: not read by format npy'
make_data "$work/augment_rows" 'good()'
config "$work/augment_rows" '{"format": "hdf5", "path": "d.h5", "augment": {"flip": true}}'
expect augment_rows 'data.augment: crops and flips are for images, but $d/d.h5 dataset "x" holds feature rows of shape (8,)'

echo "$passed passed, $failures failed"
[ "$failures" -eq 0 ]
