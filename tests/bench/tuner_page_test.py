#!/usr/bin/env python3
"""tuner_bench's page opens offline in headless Chromium with no script errors and draws one
chart per function with a curve per tool. Usage: tuner_page_test.py PLOTLY_JS. Exit 77
(skipped) without chromium."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import tuner_bench_page  # noqa: E402
from page_check import open_offline  # noqa: E402

TOOLS = ["random", "random+tpe", "optuna_tpe"]


def result():
    functions = {}
    for k, name in enumerate(("counting_ones", "branin")):
        grid = [10.0 * i for i in range(11)]
        # A curve that starts undefined (no max-budget result yet), as real ones do.
        curves = {t: [None] + [1.0 / (i + j + k + 1) for i in range(10)] for j, t in enumerate(TOOLS)}
        functions[name] = {"optimum": 0.0, "min_budget": 1, "max_budget": 81, "horizon": 100.0, "grid": grid,
                           "median_regret": curves, "median_final_regret": {t: c[-1] for t, c in curves.items()},
                           "mean_rank": {t: j + 1.0 for j, t in enumerate(TOOLS)},
                           "tpe_time_to_random_final_over_horizon": {"random+tpe": 0.5}, "runs": {}}
    return {"date": "2026-11-26 12:00 UTC", "seeds": [1, 2], "workers": 4, "time_budget": 20, "eta": 3,
            "regret": "test", "cores": 2, "host": "test", "notes": ["a note"], "tools": TOOLS,
            "overall_mean_rank": {t: j + 1.0 for j, t in enumerate(TOOLS)}, "functions": functions}


def main():
    plotly = sys.argv[1]
    opened = open_offline(lambda page: tuner_bench_page.write_page(page, result(), plotly), "tuner_bench.html")
    if opened is None:
        print("SKIP: no chromium (Debian's chromium; scripts/setup.sh installs it)")
        return 77
    check = opened[0]
    assert check["charts"] == {"chart-0": len(TOOLS), "chart-1": len(TOOLS)}, check
    print(f"1 passed, 0 failed: {check['charts']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
