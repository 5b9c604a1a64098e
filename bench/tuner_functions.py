#!/usr/bin/env python3
"""Multi-fidelity test functions from the BOHB and DEHB literature, for bench/tuner_bench.py.

Every function is minimised, has a known optimum f* at the max budget (so regret = f(x, max
budget) - f* is exact), a search space in packtune's space JSON and a budget range. They are
written here from their published definitions; each cites its source.

Two uses:

  * imported by tuner_bench.py's Optuna and DEHB drivers, so that every tool evaluates the
    same code: FUNCTIONS[name].evaluate(config, budget, seed, trial);
  * as packtune simulate's objective, `--objective exec:'python3 tuner_functions.py serve NAME
    --seed S'`: one JSON request per line on stdin ({"trial": 3, "config": {...}, "budget": 2,
    ...}), one answer per line on stdout ({"metric": f}). No "cost": a job takes the budget it
    adds, the time model every tool in the bench shares.

`python3 tuner_functions.py list` prints each function's space, budgets and optimum as JSON.
Needs numpy.
"""
import argparse
import json
import math
import sys

import numpy as np


def noise_rng(seed, trial, budget):
    """A generator keyed by (seed, trial, budget) alone, so that an answer does not depend on the
    order of the questions: tools that ask in different orders get the same numbers for the same
    (trial, budget)."""
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, int(trial) & 0xFFFFFFFF,
                                  int(round(float(budget) * 1000)) & 0xFFFFFFFF])


def fidelity(budget, low, high):
    """Budget -> fidelity z in [0, 1], on a log scale: the rungs of a geometric schedule (eta 3
    from low to high) are then evenly spaced in z, so every rung removes the same share of the
    fidelity bias. Kandasamy et al. define the functions over z; this mapping is the bench's."""
    budget = min(max(float(budget), low), high)
    return math.log(budget / low) / math.log(high / low)


class CountingOnes:
    """Stochastic counting ones: Falkner, Klein and Hutter, "BOHB: Robust and Efficient
    Hyperparameter Optimization at Scale", ICML 2018 (appendix), also used by Awad, Mallik and
    Hutter, "DEHB", IJCAI 2021. N_cat binary categorical and N_cont continuous parameters in
    [0, 1]:

        f(x) = -( sum_i x_cat_i + sum_j mean of b Bernoulli(x_cont_j) draws ),

    with the budget b the number of draws per continuous parameter (here 9 ... 729). The
    expectation is -(sum x_cat + sum x_cont), so f* = -(N_cat + N_cont), at all ones; fewer draws
    leave the same expectation with more variance. The sum of b Bernoulli(p) draws is drawn as
    one Binomial(b, p)."""

    def __init__(self, n_cat=8, n_cont=8):
        self.name = "counting_ones"
        self.n_cat, self.n_cont = n_cat, n_cont
        self.min_budget, self.max_budget = 9.0, 729.0
        self.optimum = -float(n_cat + n_cont)
        self.space = {}
        for i in range(n_cat):
            self.space[f"cat{i}"] = {"type": "choice", "values": [0, 1]}
        for j in range(n_cont):
            self.space[f"cont{j}"] = {"type": "uniform", "low": 0.0, "high": 1.0}

    def evaluate(self, config, budget, seed=0, trial=0):
        draws = max(1, int(round(float(budget))))
        rng = noise_rng(seed, trial, budget)
        cat = sum(float(config[f"cat{i}"]) for i in range(self.n_cat))
        p = np.clip(np.array([float(config[f"cont{j}"]) for j in range(self.n_cont)]), 0.0, 1.0)
        cont = float(np.sum(rng.binomial(draws, p) / draws))
        return -(cat + cont)


class BraninMF:
    """Multi-fidelity Branin: Kandasamy, Dasarathy, Schneider and Poczos, "Multi-fidelity Bayesian
    Optimisation with Continuous Approximations" (BOCA), ICML 2017, section 5 / appendix. With
    fidelity z = (z1, z2, z3) in [0, 1]^3 (here all three the one z of the budget),

        f(x, z) = a (x2 - b(z) x1^2 + c(z) x1 - r)^2 + s (1 - t(z)) cos(x1) + s,
        b(z) = 5.1 / (4 pi^2) - 0.01 (1 - z1),  c(z) = 5 / pi - 0.1 (1 - z2),
        t(z) = 1 / (8 pi) + 0.05 (1 - z3),  a = 1, r = 6, s = 10,

    on x1 in [-5, 10], x2 in [0, 15]. At z = 1 it is Branin, f* = 0.397887357729739 (three
    minima). Noise-free."""

    def __init__(self):
        self.name = "branin"
        self.min_budget, self.max_budget = 1.0, 81.0
        self.optimum = 0.397887357729739
        self.space = {"x1": {"type": "uniform", "low": -5.0, "high": 10.0},
                      "x2": {"type": "uniform", "low": 0.0, "high": 15.0}}

    def evaluate(self, config, budget, seed=0, trial=0):
        z = fidelity(budget, self.min_budget, self.max_budget)
        x1, x2 = float(config["x1"]), float(config["x2"])
        b = 5.1 / (4 * math.pi ** 2) - 0.01 * (1 - z)
        c = 5 / math.pi - 0.1 * (1 - z)
        t = 1 / (8 * math.pi) + 0.05 * (1 - z)
        return (x2 - b * x1 ** 2 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


class Hartmann6MF:
    """Multi-fidelity Hartmann-6: Kandasamy et al., ICML 2017 (as BraninMF): the Hartmann-6
    function with its weights alpha = (1.0, 1.2, 3.0, 3.2) lowered by the fidelity bias,
    alpha'(z) = alpha - 0.1 (1 - z),

        f(x, z) = -sum_i alpha'_i(z) exp(-sum_j A_ij (x_j - P_ij)^2),  x in [0, 1]^6,

    with the standard A and P. At z = 1 it is Hartmann-6, f* = -3.32236801141551 at
    (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573). Noise-free."""

    ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
    A = np.array([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
                  [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]])
    P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
                         [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]])

    def __init__(self):
        self.name = "hartmann6"
        self.min_budget, self.max_budget = 1.0, 81.0
        self.optimum = -3.32236801141551
        self.space = {f"x{j}": {"type": "uniform", "low": 0.0, "high": 1.0} for j in range(6)}

    def evaluate(self, config, budget, seed=0, trial=0):
        z = fidelity(budget, self.min_budget, self.max_budget)
        x = np.array([float(config[f"x{j}"]) for j in range(6)])
        alpha = self.ALPHA - 0.1 * (1 - z)
        return float(-np.sum(alpha * np.exp(-np.sum(self.A * (x - self.P) ** 2, axis=1))))


FUNCTIONS = {f.name: f for f in (CountingOnes(), BraninMF(), Hartmann6MF())}


def describe(f):
    return {"space": f.space, "min_budget": f.min_budget, "max_budget": f.max_budget, "optimum": f.optimum}


def serve(f, seed, stdin=sys.stdin, stdout=sys.stdout):
    """packtune simulate's exec protocol: one answer per request, flushed at once (packtune waits
    for it), until the end of input."""
    for line in stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        value = f.evaluate(request["config"], request["budget"], seed, request["trial"])
        stdout.write(json.dumps({"metric": value}) + "\n")
        stdout.flush()
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="tuner_functions", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="answer packtune simulate's exec:CMD requests on stdin")
    s.add_argument("function", choices=sorted(FUNCTIONS))
    s.add_argument("--seed", type=int, default=0, help="seeds the noise (counting_ones), with trial and budget")
    sub.add_parser("list", help="print each function's space, budgets and optimum as JSON")
    a = p.parse_args(argv)
    if a.command == "list":
        print(json.dumps({name: describe(f) for name, f in FUNCTIONS.items()}, indent=2))
        return 0
    return serve(FUNCTIONS[a.function], a.seed)


if __name__ == "__main__":
    sys.exit(main())
