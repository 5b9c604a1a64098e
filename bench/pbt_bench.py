#!/usr/bin/env python3
"""pbt_bench: population-based training against random search and ASHA on the same budget.

Runs examples/pbt_fashion_mnist.json (pbt: a population trained to budget.max, exploiting
every interval) and, on the same space, data, actors and seed:
  random   one trial per member, each trained to budget.max: the same trials and epochs
  asha     ASHA (eta 3, budget.min to budget.max) with as many trials as fill about the same
           total epochs (--asha-trials, else population x budget.max / the epochs ASHA spends
           per trial by its rung sizes)
and prints, per tuner and seed: wall time, epochs trained (each trial's highest budget, summed),
exploits (and how many of them copied rows inside a unit, from the actors' logs), the best val_accuracy and the test accuracy of the best trial's final model (best.json).
Every figure is read from the runs' own files. --json writes them all.

Run from the repository root after the build:
  bench/pbt_bench.py [--seeds 1] [--keep DIR] [--json FILE]
See docs/benchmarks.md (pbt_bench.py).
"""
import argparse
import copy
import datetime
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "pbt_fashion_mnist.json")


def asha_epochs_per_trial(low, high, eta=3):
    """The epochs ASHA spends per trial in a full sweep: every trial at the lowest rung, a 1/eta
    share at the next, and so on; each promotion trains from the rung below."""
    rungs, b = [], low
    while b < high * (1 - 1e-9):
        rungs.append(b)
        b *= eta
    rungs.append(high)
    spent, previous = 0.0, 0.0
    for i, r in enumerate(rungs):
        spent += (r - previous) / eta ** i
        previous = r
    return spent


def configs(example, asha_trials):
    population = example["tuner"]["population"]
    low, high = example["budget"]["min"], example["budget"]["max"]
    random_search = copy.deepcopy(example)
    random_search["tuner"] = {"name": "random", "trials": population}
    asha = copy.deepcopy(example)
    trials = asha_trials or round(population * high / asha_epochs_per_trial(low, high))
    asha["tuner"] = {"name": "asha", "trials": trials}
    return {"pbt": example, "random": random_search, "asha": asha}


def measure(packtune, config, seed, out):
    path = out + ".json"
    with open(path, "w") as f:
        json.dump(config, f)
    start = time.monotonic()
    with open(out + ".log", "w") as log:
        code = subprocess.run([packtune, "run", path, "--out", out, "--seed", str(seed), "--quiet"],
                              stdout=log, stderr=subprocess.STDOUT).returncode
    wall = time.monotonic() - start
    if code != 0:
        sys.exit(f"pbt_bench: {config['tuner']['name']} seed {seed} failed (exit {code}); see {out}.log")
    rows = [json.loads(line) for line in open(os.path.join(out, "results.jsonl"))]
    reached = {}
    for r in rows:
        reached[r["trial"]] = max(reached.get(r["trial"], 0.0), r["budget"])
    best = json.load(open(os.path.join(out, "best.json")))
    # How each exploit went, from the actors' logs: rows copied inside the unit, or the store's
    # copy loaded (docs/tuners.md, pbt).
    logs = [line for name in glob.glob(os.path.join(out, "logs", "actor-*.log")) for line in open(name)]
    in_unit = sum(1 for line in logs if re.search(r"goes on in unit \S+ from trial \d+'s weights", line))
    return {"tuner": config["tuner"]["name"], "seed": seed, "wall_seconds": round(wall, 1),
            "trials": len(reached), "epochs": round(sum(reached.values()), 2),
            "exploits": sum(1 for r in rows if "exploit" in r), "in_unit": in_unit, "best_val_accuracy": best["value"],
            "test_accuracy": best.get("test", {}).get("test_accuracy")}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--asha-trials", type=int, default=0)
    parser.add_argument("--tuners", default="pbt,random,asha")
    parser.add_argument("--keep", help="keep the runs in this folder")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    packtune = os.path.join(args.build, "src", "packtune")
    if not os.access(packtune, os.X_OK):
        sys.exit(f"pbt_bench: no {packtune}; build first")
    example = json.load(open(EXAMPLE))
    chosen = configs(example, args.asha_trials)
    tuners = args.tuners.split(",")
    unknown = [t for t in tuners if t not in chosen]
    if unknown:
        sys.exit(f"pbt_bench: unknown tuner {unknown[0]}; expected some of {', '.join(chosen)}")
    work = args.keep or tempfile.mkdtemp(prefix="pbt_bench-")
    os.makedirs(work, exist_ok=True)
    results = []
    print(f"pbt_bench: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, load "
          f"{os.getloadavg()[0]:.2f}, runs in {work}")
    print(f"{'tuner':8} {'seed':>4} {'wall s':>7} {'trials':>6} {'epochs':>7} {'exploits':>8} {'in unit':>7} {'best val':>8} {'test':>7}")
    for seed in range(1, args.seeds + 1):
        for name in tuners:
            r = measure(packtune, chosen[name], seed, os.path.join(work, f"{name}-{seed}"))
            results.append(r)
            test = "-" if r["test_accuracy"] is None else f"{r['test_accuracy']:.4f}"
            print(f"{name:8} {seed:>4} {r['wall_seconds']:>7.1f} {r['trials']:>6} {r['epochs']:>7.2f} "
                  f"{r['exploits']:>8} {r['in_unit']:>7} {r['best_val_accuracy']:>8.4f} {test:>7}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": results}, f, indent=1)


if __name__ == "__main__":
    main()
