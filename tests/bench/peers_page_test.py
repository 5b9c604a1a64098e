#!/usr/bin/env python3
"""peers_bench --html: the page of two sittings opens offline in headless Chromium with no
script errors, draws every sitting's chart with the points of every way, and screenshots.
Usage: peers_page_test.py PLOTLY_JS. Exit 77 (skipped) without chromium."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import peers_bench_page  # noqa: E402
from page_check import open_offline  # noqa: E402

WAYS = {"packtune": 20.0, "max_pack_1": 19.0, "ray_tune": 75.0, "optuna": 35.0}


def sitting(seed):
    ways = {}
    for i, (name, wall) in enumerate(WAYS.items()):
        curve = [[wall * f, round(0.5 + 0.35 * f + 0.002 * (i + seed), 4)] for f in (0.1, 0.3, 0.6, 0.95)]
        ways[name] = {"wall_seconds": wall, "best_val_accuracy": curve[-1][1], "test_accuracy": curve[-1][1] - 0.01,
                      "curve": curve, "trials": 17}
    ratios = {name: {"packtune_over_it_to_its_best": None if name == "optuna" else 0.5,
                     "packtune_over_it_to_its_best_model": 0.4}
              for name in WAYS if name != "packtune"}
    return {"seed": seed, "date": "2026-11-25T12:00:00+00:00", "ways": ways, "ratios": ratios, "train_size": 0,
            "validation_size": 10000, "test_size": 10000, "actors": 2, "max_pack": 4, "peer_workers": 2,
            "same_configs": True, "cores": 2, "host": "test",
            "schedule": {"tuner": "hyperband", "eta": 3, "min_epochs": 0.25, "max_epochs": 2.25, "trials": 17}}


def main():
    plotly = sys.argv[1]
    opened = open_offline(lambda page: peers_bench_page.write_page(page, [sitting(1), sitting(2)], plotly),
                          "peers.html", screenshot=True)
    if opened is None:
        print("SKIP: no chromium (Debian's chromium; scripts/setup.sh installs it)")
        return 77
    result, image = opened
    assert sorted(result["charts"]) == ["chart-0", "chart-1"], result
    # Every way's curve (4 points each) and its test star: 4 x 5 markers per chart.
    assert all(points == 20 for points in result["charts"].values()), result
    assert image[:8] == b"\x89PNG\r\n\x1a\n" and len(image) > 50_000, f"screenshot of {len(image)} bytes"
    print(f"1 passed, 0 failed: points drawn {result['charts']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
