#!/usr/bin/python3
"""The reference the Parzen estimator tests compare with: TPE's estimator as Optuna's
_ParzenEstimator defines it (prior weight 1, magic clip, endpoints off), written in numpy
from those formulas, independently of tuners/parzen_estimator.cpp.

Reads JSON {"axes": [{"categorical": bool, "choices": n, "low": a, "high": b}, ...],
"points": [[x per axis], ...] oldest first, "multivariate": bool, "queries": [[...], ...]}
and prints {"log_weights": [...], "means": [[per kernel] per numeric axis or null],
"sigmas": [...], "log_density": [per query]}."""
import json
import math
import sys

import numpy as np


def recency_weights(n):
    if n == 0:
        return np.asarray([])
    if n < 25:
        return np.ones(n)
    return np.concatenate([np.linspace(1.0 / n, 1.0, num=n - 25), np.ones(25)])


def norm_cdf(z):
    return 0.5 * np.array([math.erfc(-v / math.sqrt(2.0)) for v in np.atleast_1d(z)])


def main():
    spec = json.load(open(sys.argv[1]))
    axes, points = spec["axes"], np.asarray(spec["points"], dtype=float).reshape(-1, len(spec["axes"]))
    n = points.shape[0]
    weights = np.append(recency_weights(n), 1.0)
    weights /= weights.sum()
    means, sigmas, log_kernel = [], [], []
    for a, axis in enumerate(axes):
        obs = points[:, a]
        if axis["categorical"]:
            c = axis["choices"]
            # Every row prior_weight / kernels on each choice, one more on the observed choice.
            table = np.full((n + 1, c), 1.0 / (n + 1))
            table[np.arange(n), obs.astype(int)] += 1.0
            table /= table.sum(axis=1, keepdims=True)
            means.append(None)
            sigmas.append(None)
            log_kernel.append(lambda x, t=table: np.log(t[:, int(x)]))
            continue
        low, high = axis["low"], axis["high"]
        mus = np.append(obs, 0.5 * (low + high))
        if high <= low:  # a constant axis: no information, no term
            means.append(mus.tolist())
            sigmas.append(np.ones(n + 1).tolist())
            log_kernel.append(lambda x: np.zeros(n + 1))
            continue
        if spec["multivariate"]:
            sigma = 0.2 * max(n, 1) ** (-1.0 / (len(axes) + 4)) * (high - low) * np.ones(n + 1)
        else:
            order = np.argsort(mus, kind="stable")
            ends = np.concatenate([[low], mus[order], [high]])
            s = np.maximum(ends[1:-1] - ends[:-2], ends[2:] - ends[1:-1])
            if ends.shape[0] >= 4:
                s[0] = ends[2] - ends[1]
                s[-1] = ends[-2] - ends[-3]
            sigma = np.empty_like(s)
            sigma[order] = s
        sigma = np.clip(sigma, (high - low) / min(100.0, 1.0 + n + 1), high - low)
        sigma[-1] = high - low
        mass = norm_cdf((high - mus) / sigma) - norm_cdf((low - mus) / sigma)
        means.append(mus.tolist())
        sigmas.append(sigma.tolist())
        if axis.get("discrete"):
            # An integer's probability: the kernel's mass on its cell, within the range's mass.
            def cell(x, m=mus, s=sigma, z=mass):
                out = []
                for mk, sk in zip(m, s):
                    hi, lo = (x + 0.5 - mk) / sk, (x - 0.5 - mk) / sk
                    p = (norm_cdf(-lo) - norm_cdf(-hi))[0] if lo > 0 else (norm_cdf(hi) - norm_cdf(lo))[0]
                    zz = (x - mk) / sk
                    out.append(math.log(p) if p > 1e-300 else -0.5 * zz * zz - math.log(sk) - 0.5 * math.log(2 * math.pi))
                return np.asarray(out) - np.log(z)
            log_kernel.append(cell)
            continue
        log_kernel.append(lambda x, m=mus, s=sigma, z=mass:
                          -0.5 * ((x - m) / s) ** 2 - np.log(s) - 0.5 * np.log(2 * np.pi) - np.log(z))
    densities = []
    for q in spec["queries"]:
        terms = np.log(weights) + sum(log_kernel[a](q[a]) for a in range(len(axes)))
        top = terms.max()
        densities.append(float(top + np.log(np.exp(terms - top).sum())))
    json.dump({"log_weights": np.log(weights).tolist(), "means": means, "sigmas": sigmas,
               "log_density": densities}, sys.stdout)


main()
