#!/usr/bin/env python3
"""Writes scikit-learn's handwritten digits (1,797 rows of 64 pixel intensities, 10 classes;
Debian's python3-sklearn ships them) as feature rows to digits.h5 and a held-out test split
to digits_test.h5, beside this script:

    python3 examples/digits/make_data.py
    cd examples/digits && packtune run digits.json
"""
import os
import sys

import h5py
import numpy as np
from sklearn.datasets import load_digits

here = os.path.dirname(os.path.abspath(__file__))
out = sys.argv[1] if len(sys.argv) > 1 else here
digits = load_digits()
x = digits.data.astype(np.float32)  # [1797, 64], intensities 0..16
y = digits.target.astype(np.int64)
order = np.random.default_rng(0).permutation(len(x))  # the file's order is by writer
x, y = x[order], y[order]
test = 297  # the last rows: 1,500 to train and validate on, 297 to test the winner
for name, rows in (("digits.h5", slice(0, len(x) - test)), ("digits_test.h5", slice(len(x) - test, None))):
    with h5py.File(os.path.join(out, name), "w") as f:
        f["x"] = x[rows]
        f["y"] = y[rows]
print(f"wrote {out}/digits.h5 ({len(x) - test} rows) and digits_test.h5 ({test} rows), 64 features, 10 classes")
