#!/usr/bin/env python3
"""Writes Friedman's first regression problem (Friedman 1991, a standard test of regression
methods) to NumPy files beside this script: 10 features uniform on [0, 1], of
which 5 matter,

    y = 10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5 + noise (sd 0.5),

5,000 rows to train and validate on (x.npy, y.npy) and 1,000 to test (test_x.npy,
test_y.npy):

    python3 examples/regression/make_data.py
    cd examples/regression && packtune run friedman.json
"""
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
out = sys.argv[1] if len(sys.argv) > 1 else here
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
rng = np.random.default_rng(2026)


def friedman(n):
    x = rng.uniform(size=(n, 10)).astype(np.float32)
    y = (10 * np.sin(np.pi * x[:, 0] * x[:, 1]) + 20 * (x[:, 2] - 0.5) ** 2 + 10 * x[:, 3] + 5 * x[:, 4]
         + rng.normal(scale=0.5, size=n))
    return x, y.astype(np.float32)


for prefix, n in (("", rows), ("test_", 1000)):
    x, y = friedman(n)
    np.save(os.path.join(out, prefix + "x.npy"), x)
    np.save(os.path.join(out, prefix + "y.npy"), y)
print(f"wrote {out}/x.npy, y.npy ({rows} rows) and test_x.npy, test_y.npy (1000 rows); "
      f"the targets' variance is {np.var(np.load(os.path.join(out, 'y.npy'))):.2f}")
