#!/usr/bin/env python3
"""hyperband_bench: one Hyperband schedule and seed, packed and one trial per actor.

  packed            packtune run with the config's max_pack (or --max-pack K), re-planning each
                    rung's promoted trials together ("replan": true, the default)
  packed_no_replan  the same with "replan": false: promoted trials placed online one by one
  mixed_always      packed with "mixed_packs": "always": trials that do not fuse share an actor
                    side by side on any device (by default, "auto", a CPU actor trains one unit
                    at a time; on a GPU the two are the same)
  max_pack_1        the same with --max-pack 1: one trial at a time per actor
  mixed_never       packed with "mixed_packs": "never": one unit at a time per actor (on a GPU,
                    one CUDA stream)
  packed_cublas_ws  packed with CUBLAS_WORKSPACE_CONFIG=:16:8 in the actors' environment, one of
                    the settings cuBLAS documents for results independent of concurrent streams
                    (:4096:8, the other, is LibTorch's own default on Hopper)
The last two are run only when named (--ways): on a CPU they are packed again.

The experiment is examples/fashion_mnist.json's model and space under Hyperband (eta 3, 0.25
to 2.25 epochs: 17 trials, 22 jobs in one sweep). The ways run in turn, --repeat rounds of
them interleaved (the order rotated each round, as this machine is shared and noisy), each timed from start to exit of
`packtune run` (actor start-up and data loading included). Prints each way's wall times and
median, the median ratios, and the largest difference between the ways' reports (training is
deterministic per trial given its seed, so on a CPU they must agree within 2e-3; exit 1 otherwise).
With --repeat 2 or more it also says whether each way repeats its own first round bit for bit:
every way must on a CPU, and max_pack_1 (one trial, one stream) must on a GPU. On a GPU packing
changes kernels and their rounding (docs/reproducibility.md), so the ways' differences and the
other ways' repeats are measured there, not judged.

Run from the repository root after the build: bench/hyperband_bench.py [--quick]. See
docs/benchmarks.md.
"""
import argparse
import datetime
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_lib import (BenchError, apply_preset, hyperband_schedule, load_average, read_reports,  # noqa: E402
                       run_timed, set_data_sizes, sweep_trials)

WAYS = ("packed", "packed_no_replan", "mixed_always", "max_pack_1", "mixed_never", "packed_cublas_ws")
DEFAULT_WAYS = WAYS[:4]
# A setting cuBLAS's documentation gives for results that do not depend on concurrent streams.
CUBLAS_DETERMINISTIC = {"CUBLAS_WORKSPACE_CONFIG": ":16:8"}
HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 2e-3


def parse_args(argv):
    p = argparse.ArgumentParser(prog="hyperband_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default=os.path.join(HERE, "..", "examples", "fashion_mnist.json"),
                   help="config whose model and space are used (default: examples/fashion_mnist.json)")
    p.add_argument("--packtune", default=os.path.join(HERE, "..", "build", "src", "packtune"), help="the packtune binary")
    p.add_argument("--train-size", type=int, help="training images, 0 = all (default 0; --quick 10000)")
    p.add_argument("--validation-size", type=int, help="validation images (default: the config's; --smoke 1024)")
    p.add_argument("--repeat", type=int, help="rounds of the ways, interleaved (default 3; --quick 1)")
    p.add_argument("--actors", type=int, help="local actors (default 2 on a CPU, 1 per GPU: 1 on cuda)")
    p.add_argument("--device", help="cpu | cuda | cuda:N | auto (default: the config's)")
    p.add_argument("--min-epochs", type=float, default=0.25, help="Hyperband's min budget (default 0.25)")
    p.add_argument("--max-epochs", type=float, default=2.25,
                   help="Hyperband's max budget (default 2.25: 17 trials; 6.75: 49 trials, where a GPU has "
                        "a bottom rung of 27 to pack)")
    p.add_argument("--max-pack", type=int, help="trials per actor when packed (default: the config's)")
    p.add_argument("--fuse", help="auto | always | never (default: the config's)")
    p.add_argument("--seed", type=int, default=1, help="experiment seed (default 1)")
    p.add_argument("--ways", default=",".join(DEFAULT_WAYS),
                   help=f"comma-separated subset of {','.join(WAYS)} (default {','.join(DEFAULT_WAYS)})")
    p.add_argument("--quick", action="store_true", help="10,000 training images, one round: a few minutes on 2 cores")
    p.add_argument("--smoke", action="store_true",
                   help="2,048 training and 1,024 validation images, one round, fuse never: checks that every way runs and agrees")
    p.add_argument("--json", action="store_true", help="print one JSON object (progress goes to stderr)")
    p.add_argument("--keep", metavar="DIR", help="run in DIR and keep the outputs (default: a temporary folder)")
    a = p.parse_args(argv)
    preset = {"train_size": 10000, "repeat": 1} if a.quick else {"train_size": 0, "repeat": 3}
    if a.smoke:
        preset = {"train_size": 2048, "validation_size": 1024, "repeat": 1, "fuse": "never"}
    apply_preset(a, preset)
    if a.actors is None:
        a.actors = 1 if (a.device or "").startswith("cuda") else 2
    a.ways = [w for w in a.ways.split(",") if w]
    if any(w not in WAYS for w in a.ways) or not a.ways:
        p.error(f"--ways: expected some of {','.join(WAYS)}")
    if a.repeat < 1 or a.actors < 1 or (a.max_pack is not None and a.max_pack < 1):
        p.error("--repeat, --actors and --max-pack must be >= 1")
    return a


def log(message):
    print(f"hyperband_bench: {message}", file=sys.stderr, flush=True)


def write_configs(a, work, trials):
    with open(a.config) as f:
        base = json.load(f)
    base["name"] = "hyperband_bench"
    base["seed"] = a.seed
    base["tuner"] = {"name": "hyperband", "eta": 3, "trials": trials}  # one whole sweep
    base["budget"] = {"unit": "epochs", "min": a.min_epochs, "max": a.max_epochs, "report_every": a.min_epochs}
    base["actors"] = a.actors
    if a.device is not None:
        base["device"] = a.device
    base["evaluate_test"] = False  # the same for every way; not what is compared
    set_data_sizes(base, a.train_size, a.validation_size, a.max_pack)
    if a.fuse is not None:
        base["fuse"] = a.fuse
    paths = {}
    for way in WAYS:
        config = json.loads(json.dumps(base))
        if way == "packed_no_replan":
            config["replan"] = False
        if way == "max_pack_1":
            config["max_pack"] = 1
        if way == "mixed_always":
            config["mixed_packs"] = "always"
        if way == "mixed_never":
            config["mixed_packs"] = "never"
        paths[way] = os.path.join(work, way + ".json")
        with open(paths[way], "w") as f:
            json.dump(config, f, indent=2)
    return paths, base


def largest_difference(a, b, strict=True):
    """The largest metric difference between two runs' reports, over the (trial, budget) pairs
    both reported, and where it is. Strict (the CPU, where packing changes no bit): BenchError
    if the runs differ in pairs. On a GPU fused and plain kernels round differently, a close
    rung can promote another trial, and the pairs that differ are counted instead."""
    ra = {(r["trial"], r["budget"]): r for r in a}
    rb = {(r["trial"], r["budget"]): r for r in b}
    if strict and (len(a) != len(b) or ra.keys() != rb.keys()):
        raise BenchError(f"the runs reported different (trial, budget) pairs: {sorted(set(ra) ^ set(rb))[:10]}")
    worst, where = 0.0, {"pairs_only_in_one_run": len(set(ra) ^ set(rb))}
    for key in ra.keys() & rb.keys():
        r = ra[key]
        for metric in ("val_accuracy", "val_loss", "train_loss"):
            if r.get(metric) is None or rb[key].get(metric) is None:
                if r.get(metric) != rb[key].get(metric):
                    if strict:
                        raise BenchError(f"trial {key[0]} budget {key[1]} {metric}: {r.get(metric)} vs {rb[key].get(metric)}")
                    # On a GPU a trial can diverge in one run only: the largest difference there is.
                    worst, where = math.inf, {"trial": key[0], "budget": key[1], "metric": metric,
                                              "unit_sizes": [r.get("unit_size"), rb[key].get("unit_size")],
                                              "pairs_only_in_one_run": where["pairs_only_in_one_run"]}
                continue
            d = abs(r[metric] - rb[key][metric])
            if d > worst:
                # The unit sizes say whether fusion (other kernels, other rounding) is why.
                worst, where = d, {"trial": key[0], "budget": key[1], "metric": metric,
                                   "unit_sizes": [r.get("unit_size"), rb[key].get("unit_size")],
                                   "pairs_only_in_one_run": where["pairs_only_in_one_run"]}
    return worst, where


def repeat_differences(first, others):
    """How a way's later rounds differ from its first, bit for bit: metrics that differ over the
    (trial, budget) pairs both reported, and pairs that only one reported."""
    ra = {(r["trial"], r["budget"]): r for r in first}
    differing = only_one = 0
    for rows in others:
        rb = {(r["trial"], r["budget"]): r for r in rows}
        only_one += len(ra.keys() ^ rb.keys())
        differing += sum(ra[k].get(m) != rb[k].get(m) for k in ra.keys() & rb.keys()
                         for m in ("val_accuracy", "val_loss", "train_loss"))
    return {"rounds": 1 + len(others), "equal": differing == 0 and only_one == 0,
            "metrics_differing": differing, "pairs_only_in_one_run": only_one}


def judge(strict, worst, repeats):
    """What must hold, as failures: on a CPU (strict) everything, since packing changes no bit;
    on a GPU only that a run of one trial per actor, its kernels one at a time on one stream,
    repeats itself."""
    failures = []
    if strict and worst > TOLERANCE:
        failures.append(f"the ways' reports differ by {worst:.2e}, more than {TOLERANCE}")
    for way, r in repeats.items():
        if not r["equal"] and (strict or way == "max_pack_1"):
            failures.append(f"{way} did not repeat its reports bit for bit ({r['metrics_differing']} "
                            f"metrics differ, {r['pairs_only_in_one_run']} (trial, budget) pairs in one round only)")
    return failures


def bench(a):
    work = a.keep or tempfile.mkdtemp(prefix="hyperband_bench-")
    os.makedirs(work, exist_ok=True)
    try:
        sched = hyperband_schedule(a.packtune, a.min_epochs, a.max_epochs, 3)
        trials = sweep_trials(sched)
        jobs = sum(int(r["n"]) for b in sched["brackets"] for r in b["rungs"])
        paths, base = write_configs(a, work, trials)
        walls = {w: [] for w in a.ways}
        reports = {}
        loads = []
        for round_ in range(a.repeat):
            # Rotated each round: no way always runs first (after the others' page cache warm-up).
            for way in a.ways[round_ % len(a.ways):] + a.ways[:round_ % len(a.ways)]:
                out = os.path.join(work, f"{way}-{round_}")
                command = [a.packtune, "run", paths[way], "--out", out, "--quiet"]
                log(f"round {round_ + 1}/{a.repeat}, {way}: {' '.join(command)}")
                loads.append(load_average())
                env = dict(os.environ, **CUBLAS_DETERMINISTIC) if way == "packed_cublas_ws" else None
                wall = run_timed(command, out + ".stdout", out + ".stderr", "packtune run", env=env)
                walls[way].append(wall)
                rows = read_reports(out)
                if way not in reports:
                    reports[way] = rows
                else:  # every round trains the same trials
                    reports[way + f"-{round_}"] = rows
                log(f"{way}: {wall:.1f} s, {len(rows)} reports")
        first = reports[a.ways[0]]
        # Against the first way's first round: the largest difference of each other run.
        strict = base.get("device", "cpu") == "cpu"
        differences = {name: largest_difference(first, rows, strict)
                       for name, rows in reports.items() if name != a.ways[0]}
        worst = max((d for d, _ in differences.values()), default=0.0)
        repeats = {way: repeat_differences(reports[way], [rows for name, rows in reports.items()
                                                          if name.startswith(way + "-")])
                   for way in a.ways if a.repeat > 1}
        failures = judge(strict, worst, repeats)
        # Any trial that trained fused in one run and plain in another (fuse "auto" sizes units
        # from profiles the actors time, which a loaded machine can tip) differs by more than
        # rounding: fused kernels add in another order.
        fused = sorted({r["trial"] for rows in reports.values() for r in rows if r.get("unit_size", 1) > 1})
        best = max(r["val_accuracy"] for r in first if r.get("val_accuracy") is not None)
        median = {w: statistics.median(v) for w, v in walls.items()}

        def ratio(x, y):
            return round(median[x] / median[y], 3) if x in median and y in median else None

        return {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.node()}, {os.cpu_count()} CPU(s)",
            "load_average": loads,
            "schedule": f"hyperband eta 3, {a.min_epochs:g} to {a.max_epochs:g} epochs, {trials} trials, {jobs} jobs",
            "device": base.get("device", "cpu"),
            "train_size": a.train_size, "actors": a.actors, "max_pack": base.get("max_pack"),
            "fuse": base.get("fuse", "auto"), "seed": a.seed, "repeat": a.repeat,
            "wall_seconds": walls, "median_seconds": median,
            "packed_over_max_pack_1": ratio("packed", "max_pack_1"),
            "packed_over_packed_no_replan": ratio("packed", "packed_no_replan"),
            "mixed_always_over_max_pack_1": ratio("mixed_always", "max_pack_1"),
            "reports": len(first), "largest_report_difference": worst, "same_reports": worst <= TOLERANCE,
            "repeats": repeats, "judged": "all" if strict else "max_pack_1 repeats", "failures": failures,
            "differences": {name: {"largest": d, "at": at} for name, (d, at) in differences.items()},
            "trials_fused_in_some_run": fused,
            "best_val_accuracy": best,
        }
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        r = bench(a)
    except BenchError as e:
        print(f"hyperband_bench: {e}", file=sys.stderr)
        return 1
    if a.json:
        print(json.dumps(r, indent=2))
    else:
        print(f"{r['schedule']}, seed {r['seed']}, {r['train_size'] or 'all'} training images, {r['actors']} actors "
              f"on {r['device']}, max_pack {r['max_pack']}, fuse {r['fuse']}; {r['date']}, {r['machine']}")
        for way, v in r["wall_seconds"].items():
            print(f"  {way:<17} median {r['median_seconds'][way]:6.1f} s   ({', '.join(f'{x:.1f}' for x in v)})")
        print(f"  packed / max_pack_1: {r['packed_over_max_pack_1']}   packed / packed_no_replan: "
              f"{r['packed_over_packed_no_replan']}   mixed_always / max_pack_1: "
              f"{r['mixed_always_over_max_pack_1']}")
        print(f"  {r['reports']} reports, largest difference between the ways {r['largest_report_difference']:.2e} "
              f"({'within' if r['same_reports'] else 'NOT within'} {TOLERANCE}); best val_accuracy {r['best_val_accuracy']:.4f}")
        for way, d in r["repeats"].items():
            print(f"  {way} over {d['rounds']} rounds: " + ("the same reports bit for bit" if d["equal"] else
                  f"{d['metrics_differing']} metrics differ, {d['pairs_only_in_one_run']} pairs in one round only"))
        for name, d in r["differences"].items():
            print(f"    {a.ways[0]} vs {name}: {d['largest']:.2e} at {d['at']}")
        if r["trials_fused_in_some_run"]:
            print(f"  trials that trained in a fused unit in some run: {r['trials_fused_in_some_run']}")
    for failure in r["failures"]:
        print(f"hyperband_bench: {failure}", file=sys.stderr)
    return 1 if r["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
