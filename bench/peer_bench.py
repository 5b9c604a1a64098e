#!/usr/bin/env python3
"""peer_bench: one tuning experiment end to end, three ways, in one run.

  packed      packtune run CONFIG with the config's packing (max_pack as configured or
              --max-pack K)
  max_pack_1  packtune run CONFIG --max-pack 1: one trial at a time per actor
  loop        the same trials (configs read from the packed run's results.jsonl) trained one
              after another in a plain PyTorch loop in python3 (bench/peer_loop.py)

Each way is timed from start to exit of its process (data loading, actor start-up and
evaluations included, as a user waits for them). Prints the wall times, the ratios to the
loop, and each way's best val_accuracy (a check that all three trained the same problem).

The build writes build/bench/peer_bench, which runs this with the packtune binary, the loop
and examples/fashion_mnist.json filled in. See docs/benchmarks.md.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

from bench_lib import (DEFAULT_DATA_DIR, BenchError, apply_preset, load_average, parse_ways, read_reports,
                       resolve_data_dir, run_main, run_timed, set_data_sizes)

WAYS = ("packed", "max_pack_1", "loop")


def parse_args(argv, defaults):
    p = argparse.ArgumentParser(
        prog="peer_bench",
        description="One tuning experiment three ways: packtune packed, packtune --max-pack 1, "
                    "and a plain PyTorch loop over the same trials; wall times and ratios.")
    p.add_argument("--config", default=defaults.get("config"),
                   help="experiment config whose model and space are used (default: examples/fashion_mnist.json)")
    p.add_argument("--trials", type=int, help="random-search trials (default 64; --quick 8)")
    p.add_argument("--epochs", type=float, help="budget of every trial in epochs (default 2; --quick 0.5)")
    p.add_argument("--train-size", type=int,
                   help="training images, 0 = all that the validation split leaves (default 0; --quick 10000)")
    p.add_argument("--validation-size", type=int, help="validation images (default: the config's)")
    p.add_argument("--device", default="auto", help="cpu | cuda | cuda:N | auto (default auto)")
    p.add_argument("--actors", type=int, default=1, help="packtune's local actors (default 1)")
    p.add_argument("--max-pack", type=int, help="trials per actor in the packed way (default: the config's)")
    p.add_argument("--data-dir", help="Fashion-MNIST's folder (default: $PACKTUNE_DATA_DIR, else " + DEFAULT_DATA_DIR + ")")
    p.add_argument("--quick", action="store_true",
                   help="8 trials, 10,000 training images, 0.5 epochs: a few minutes on 2 cores")
    p.add_argument("--smoke", action="store_true",
                   help="2 trials, 1,024 training and 512 validation images, 0.25 epochs: checks that every way runs")
    p.add_argument("--ways", default=",".join(WAYS), help="comma-separated subset of " + ",".join(WAYS) +
                        " (default all; loop runs packed too, for its trial configs)")
    p.add_argument("--json", action="store_true", help="print one JSON object (progress goes to stderr)")
    p.add_argument("--keep", metavar="DIR", help="run in DIR and keep the runs' outputs (default: a temporary folder, removed)")
    p.add_argument("--packtune", default=defaults.get("packtune"), help="the packtune binary")
    p.add_argument("--loop", default=defaults.get("loop"), help="bench/peer_loop.py")
    p.add_argument("--python", default=os.environ.get("PEER_BENCH_PYTHON"),
                   help="the python with torch that runs the loop (default: $PEER_BENCH_PYTHON, else the "
                        "first of python3 on the PATH and /usr/bin/python3 that imports torch)")
    a = p.parse_args(argv)
    preset = {"trials": 64, "epochs": 2.0, "train_size": 0}
    if a.quick:
        preset = {"trials": 8, "epochs": 0.5, "train_size": 10000}
    if a.smoke:
        preset = {"trials": 2, "epochs": 0.25, "train_size": 1024, "validation_size": 512}
    apply_preset(a, preset)
    a.ways = parse_ways(p, a.ways, WAYS)
    if a.trials < 1 or a.epochs <= 0 or a.actors < 1 or a.train_size < 0 or (a.max_pack is not None and a.max_pack < 1):
        p.error("--trials, --actors and --max-pack must be >= 1, --epochs > 0, --train-size >= 0")
    for name in ("config", "packtune", "loop"):
        if not getattr(a, name):
            p.error(f"--{name} is required when this script is run from the source tree; "
                    "build/bench/peer_bench fills it in")
    a.data_dir = resolve_data_dir(a.data_dir)
    return a


def log(message):
    print(f"peer_bench: {message}", file=sys.stderr, flush=True)


def experiment_config(a, work):
    """The experiment all three ways run: the config's model and space, random search."""
    with open(a.config) as f:
        config = json.load(f)
    config["name"] = "peer_bench"
    config["tuner"] = {"name": "random", "trials": a.trials}
    every = float(config.get("budget", {}).get("report_every", 0) or a.epochs)
    config["budget"] = {"unit": "epochs", "max": a.epochs, "report_every": min(every, a.epochs)}
    config["actors"] = a.actors
    config["device"] = a.device
    set_data_sizes(config, a.train_size, a.validation_size, a.max_pack, a.data_dir)
    path = os.path.join(work, "experiment.json")
    with open(path, "w") as f:
        json.dump(config, f, indent=2)
    return path, config


def summarise(reports):
    accuracies = [r["val_accuracy"] for r in reports if r.get("val_accuracy") is not None]
    return {"best_val_accuracy": max(accuracies) if accuracies else None,
            "trials_done": len({r["trial"] for r in reports if r.get("final")}),
            "reports": len(reports)}


def run_packtune(a, config_path, work, name, max_pack):
    out_dir = os.path.join(work, name)
    command = [a.packtune, "run", config_path, "--out", out_dir]
    if max_pack is not None:
        command += ["--max-pack", str(max_pack)]
    log(f"{name}: {' '.join(command)}")
    wall = run_timed(command, os.path.join(work, name + ".stdout"), os.path.join(work, name + ".stderr"),
                     "packtune run")
    result = {"wall_seconds": wall}
    result.update(summarise(read_reports(out_dir)))
    with open(os.path.join(out_dir, "config.json")) as f:
        result["max_pack"] = json.load(f).get("max_pack")
    log(f"{name}: {wall:.1f} s, best val_accuracy {result['best_val_accuracy']}")
    return result, out_dir


def trial_configs(out_dir):
    """Each trial's full config as packtune ran it, from its results.jsonl."""
    configs = {}
    for r in read_reports(out_dir):
        if "config" not in r:
            raise BenchError(f"{out_dir}/results.jsonl has no \"config\" per report: this packtune is too old "
                             "for peer_bench (it needs the trial configs to train the same trials)")
        configs.setdefault(r["trial"], r["config"])
    return [{"trial": t, "seed": 1000 + t, "config": configs[t]} for t in sorted(configs)]


def run_loop(a, config, trials, work, device):
    spec = {"device": device, "threads": 0,
            "data": {"dir": config["data"]["dir"], "train_size": config["data"].get("train_size", 0),
                     "validation_size": config["data"].get("validation_size", 10000)},
            "budget": {"max": config["budget"]["max"], "report_every": config["budget"]["report_every"]},
            "trials": trials}
    spec_path = os.path.join(work, "loop_spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f, indent=2)
    command = [a.python, a.loop, spec_path]
    log(f"loop: {' '.join(command)} ({len(trials)} trials on {device})")
    out_path = os.path.join(work, "loop.stdout")
    # packtune starts its actors with OMP_WAIT_POLICY=PASSIVE unless it is set (spinning libgomp
    # threads made steps 3-7x slower on busy vCPUs); the loop gets the same, or the ratio would
    # measure that setting rather than packing.
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    wall = run_timed(command, out_path, os.path.join(work, "loop.stderr"), "the PyTorch loop", env)
    with open(out_path) as f:
        out = json.load(f)
    reports = [dict(r, trial=t["trial"], final=(i == len(t["reports"]) - 1))
               for t in out["trials"] for i, r in enumerate(t["reports"])]
    result = {"wall_seconds": wall, "python": a.python, "setup_seconds": out["setup_seconds"], "train_seconds": out["train_seconds"],
              "torch": out["torch"], "device": out["device"], "threads": out["threads"],
              "omp_wait_policy": env["OMP_WAIT_POLICY"]}
    result.update(summarise(reports))
    log(f"loop: {wall:.1f} s, best val_accuracy {result['best_val_accuracy']}")
    return result


def resolve_python_and_device(a):
    """The python that runs the loop, and one concrete device for all three ways (`auto` is
    what torch in that python sees). A pyenv or venv python3 first on the PATH may lack the
    system's torch, hence the fallback to /usr/bin/python3."""
    candidates = [a.python] if a.python else ["python3", "/usr/bin/python3"]
    errors = []
    for python in candidates:
        try:
            out = subprocess.run([python, a.loop, "--probe-device", a.device], capture_output=True, text=True)
        except OSError as e:
            errors.append(f"{python}: {e}")
            continue
        if out.returncode == 0:
            return python, out.stdout.strip()
        errors.append(f"{python}: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
    raise BenchError("no python with torch for the loop (install python3-torch, or pass --python):\n  " +
                     "\n  ".join(errors))


def ratio(x, y):
    return x / y if x and y else None


def bench(a):
    work = a.keep or tempfile.mkdtemp(prefix="peer_bench-")
    os.makedirs(work, exist_ok=True)
    try:
        a.python, a.device = resolve_python_and_device(a)
        config_path, config = experiment_config(a, work)
        load_before = load_average()
        ways = {}
        packed_dir = None
        if "packed" in a.ways or "loop" in a.ways:
            ways["packed"], packed_dir = run_packtune(a, config_path, work, "packed", None)
        if "max_pack_1" in a.ways:
            ways["max_pack_1"], _ = run_packtune(a, config_path, work, "max_pack_1", 1)
        if "loop" in a.ways:
            ways["loop"] = run_loop(a, config, trial_configs(packed_dir), work, a.device)
        loop = ways.get("loop", {}).get("wall_seconds")
        return {
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "host": platform.node(), "cores": os.cpu_count(),
            "load_average_before": load_before, "load_average_after": load_average(),
            "device": a.device, "trials": a.trials, "epochs": a.epochs,
            "train_size": config["data"].get("train_size", 0),
            "validation_size": config["data"].get("validation_size", 10000),
            "batch_size": config.get("model", {}).get("batch_size"),
            "actors": a.actors, "max_pack": config.get("max_pack"),
            "ways": ways,
            "ratios": {
                "packed_over_loop": ratio(ways.get("packed", {}).get("wall_seconds"), loop),
                "max_pack_1_over_loop": ratio(ways.get("max_pack_1", {}).get("wall_seconds"), loop),
                "packed_over_max_pack_1": ratio(ways.get("packed", {}).get("wall_seconds"),
                                                ways.get("max_pack_1", {}).get("wall_seconds")),
            },
            "work_dir": work if a.keep else None,
        }
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


def print_table(r):
    print(f"{r['trials']} trials x {r['epochs']:g} epochs of {os.path.basename(r.get('config', '') or 'the config')}"
          f" space on {r['device']}, {r['actors']} actor(s), packed max_pack {r['max_pack']}; "
          f"train {r['train_size'] or 'all'}, validation {r['validation_size']} images")
    print(f"load average before {r['load_average_before']}, after {r['load_average_after']} ({r['cores']} cores)\n")
    loop = r["ways"].get("loop", {}).get("wall_seconds")
    print(f"{'way':<12} {'wall s':>9} {'/ loop':>8} {'best val_acc':>13} {'trials':>7}")
    for name in WAYS:
        w = r["ways"].get(name)
        if not w:
            continue
        rel = ratio(w["wall_seconds"], loop)
        acc = w["best_val_accuracy"]
        print(f"{name:<12} {w['wall_seconds']:9.1f} {f'{rel:.2f}x' if rel else '-':>8} "
              f"{f'{acc:.4f}' if acc is not None else '-':>13} {w['trials_done']:>7}")
    if "loop" in r["ways"]:
        lp = r["ways"]["loop"]
        print(f"\nloop: torch {lp['torch']} on {lp['device']}, {lp['setup_seconds']:.1f} s loading data, "
              f"{lp['train_seconds']:.1f} s training; wall includes python start-up and import")


def main(argv=None, **defaults):
    a = parse_args(sys.argv[1:] if argv is None else argv, defaults)
    rc, result = run_main("peer_bench", bench, a)
    if rc:
        return rc
    result["config"] = a.config
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
