"""tuner_bench_rules: how tuner_bench scores a run, the same rules for every tool.

Regret is read off the max-budget results only; the medians count a run that never reached a
value as worse than any; ranks share ties. Both sides use them: the driver to summarise, the
peers' side (tuner_bench_worker.py) to turn its results into a trace. The standard library
only, as they run in the peers' venvs too; tests/bench/tuner_bench_test.py checks them.
"""
import math

ETA = 3
GRID = 200  # points of the median curves


def trace_of(results, fn):
    """[(t, regret)] at each improvement of the best max-budget value, the rule for every tool."""
    best, trace = math.inf, []
    for t, budget, value in sorted(results, key=lambda r: r[0]):
        if abs(budget - fn["max_budget"]) <= 1e-9 * fn["max_budget"] and value < best:
            best = value
            trace.append([t, value - fn["optimum"]])
    return trace


def regret_at(trace, t):
    r = None
    for time_, regret in trace:
        if time_ > t:
            break
        r = regret
    return r


def median(values):
    """Median with None as +infinity (never reached); None if the median itself is infinite."""
    v = sorted(math.inf if x is None else x for x in values)
    if not v:
        return None
    n = len(v)
    m = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    return None if math.isinf(m) else m


def ranks(values):
    """Ranks from 1 (lowest regret), ties sharing the mean rank; None ranks last."""
    v = [math.inf if x is None else x for x in values]
    order = sorted(range(len(v)), key=lambda i: v[i])
    out = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def summarize(fn, runs, tools, seeds, horizon):
    grid = [horizon * i / GRID for i in range(GRID + 1)]
    curves, finals, mean_ranks = {}, {}, {}
    for tool in tools:
        traces = [runs[tool][s]["trace"] for s in seeds]
        curves[tool] = [median([regret_at(tr, t) for tr in traces]) for t in grid]
        finals[tool] = median([runs[tool][s]["final_regret"] for s in seeds])
    per_seed = {tool: [] for tool in tools}
    for s in seeds:
        for tool, r in zip(tools, ranks([runs[tool][s]["final_regret"] for tool in tools])):
            per_seed[tool].append(r)
    for tool in tools:
        mean_ranks[tool] = sum(per_seed[tool]) / len(per_seed[tool])
    to_random = {}
    if "random" in tools and finals.get("random") is not None:
        target = finals["random"]
        for tool in tools:
            if tool.endswith("+tpe"):
                t = next((g for g, c in zip(grid, curves[tool]) if c is not None and c <= target), None)
                to_random[tool] = None if t is None else t / horizon
    return {"optimum": fn["optimum"], "min_budget": fn["min_budget"], "max_budget": fn["max_budget"],
            "horizon": horizon, "grid": grid, "median_regret": curves, "median_final_regret": finals,
            "mean_rank": mean_ranks,
            "tpe_time_to_random_final_over_horizon": to_random}
