"""peers_bench_ways: how peers_bench runs each of its ways and reads back what it did.

packtune and max_pack_1 are `packtune run` on the problem's config; ray_tune and optuna are
peers_bench.py --worker in the peers' venv (peers_bench_worker.py). Each way's result is the
same dict (wall seconds, reports, best, test accuracy, curve), so that peers_bench_summary.py
can set them side by side. The standard library only, as the rest of the driver.
"""
import json
import os
import re
import sys
import time

from bench_lib import BenchError, load_average, read_reports
import bench_lib
from peers_bench_worker import SCRIPT

WAYS = ("packtune", "max_pack_1", "ray_tune", "optuna")


def log(message):
    print(f"peers_bench: {message}", file=sys.stderr, flush=True)


def run_timed(command, out_path, err_path, what, env=None, timeout=None):
    """bench_lib.run_timed, also returning when the command started (epoch seconds)."""
    start_wall = time.time()
    return start_wall, bench_lib.run_timed(command, out_path, err_path, what, env, timeout)


def curve(reports):
    """(seconds, best val_accuracy so far) at each report that raised the best."""
    out, best = [], None
    for r in sorted(reports, key=lambda r: r["t"]):
        if r.get("val_accuracy") is not None and (best is None or r["val_accuracy"] > best):
            best = r["val_accuracy"]
            out.append([round(r["t"], 3), best])
    return out


def run_packtune(a, config_path, work, name, max_pack):
    out_dir = os.path.join(work, name)
    command = ["nice", a.packtune, "run", config_path, "--out", out_dir]
    if max_pack is not None:
        command += ["--max-pack", str(max_pack)]
    log(f"{name}: {' '.join(command)}  (load {load_average()})")
    load = load_average()
    _, wall = run_timed(command, os.path.join(work, name + ".stdout"), os.path.join(work, name + ".stderr"),
                        "packtune run")
    rows = read_reports(out_dir)
    reports = [{"t": r.get("wall_time", 0.0), "trial": r["trial"], "budget": r.get("budget"),
                "val_accuracy": r.get("val_accuracy")} for r in rows]
    with open(os.path.join(out_dir, "best.json")) as f:
        best = json.load(f)
    test = best.get("test") or {}
    configs = {}
    for r in rows:
        configs.setdefault(r["trial"], r.get("config", {}))
    result = {"wall_seconds": wall, "load_average_before": load, "load_average_after": load_average(),
              "trials": len({r["trial"] for r in rows}), "reports": len(rows),
              "_reports": reports, "_configs": configs,
              "best_val_accuracy": max((r["val_accuracy"] for r in reports if r["val_accuracy"] is not None), default=None),
              "best_trial": best.get("trial"), "test_accuracy": test.get("test_accuracy", test.get("accuracy")),
              "curve": curve(reports), "first_report_seconds": min((r["t"] for r in reports), default=None)}
    with open(os.path.join(out_dir, "config.json")) as f:
        packed = json.load(f)
    result["max_pack"] = packed.get("max_pack")
    result["libtorch"] = libtorch_of(out_dir)
    if packed.get("tuner", {}).get("sampler") == "tpe":
        result["modelled_configs"] = modelled_configs(out_dir)
    log(f"{name}: {wall:.1f} s, best val {result['best_val_accuracy']}, test {result['test_accuracy']}; "
        f"{result['libtorch'] or 'LibTorch not logged'}")
    return result


def libtorch_of(out_dir):
    """The LibTorch packtune's first actor trained with, as its log names it ("LibTorch 2.15.0,
    BLAS mkl, CPU kernels AVX512"; None if it does not): on a CPU much of the speed hangs on it,
    and the peers' torch is 2.x (docs/building.md)."""
    try:
        with open(os.path.join(out_dir, "logs", "actor-0.log")) as f:
            for line in f:
                found = re.search(r"; (LibTorch [^;]*)$", line.rstrip("\n"))
                if found:
                    return found.group(1)
    except OSError:
        pass
    return None


def modelled_configs(out_dir):
    """How many of a run's new trials TPE modelled: start jobs in journal.jsonl whose "why" is not
    a random draw (docs/tuners.md, "What it proposed and why")."""
    count = 0
    with open(os.path.join(out_dir, "journal.jsonl")) as f:
        for line in f:
            job = json.loads(line).get("job") if line.strip() else None
            if isinstance(job, dict) and job.get("kind") == "start" and not job.get("why", {}).get("random"):
                count += 1
    return count


def drawn_configs(way, space, trials):
    """The sampled part of each trial's config in a packtune way's run, in trial order."""
    by_trial = {t: {k: c[k] for k in space if k in c} for t, c in way["_configs"].items()}
    if sorted(by_trial) != list(range(trials)):
        raise BenchError(f"packtune: expected trials 0 ... {trials - 1} to compare configs, found {sorted(by_trial)}")
    return [by_trial[t] for t in range(trials)]


def sampler_of(a, way, given_configs):
    """Which sampler drew a way's configs, in words (the JSON's "samplers")."""
    if way in ("packtune", "max_pack_1"):
        return f"sampler {a.own_samplers or 'random'}"
    if given_configs:
        return "packtune's configs, in its trial order"
    if way == "optuna":
        return ("TPESampler with Optuna's defaults (multivariate, constant_liar)" if a.own_samplers == "tpe"
                else "RandomSampler")
    return "BasicVariantGenerator (Ray Tune's default search: random draws)"


def run_peer(a, name, config_path, trials, work, configs=None):
    spec = {"problem": config_path, "trials": trials, "workers": a.workers, "work": os.path.join(work, name),
            "sampler": a.own_samplers if not configs else None}
    if configs:
        spec["configs"] = configs
    os.makedirs(spec["work"], exist_ok=True)
    spec_path = os.path.join(work, name + "_spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f, indent=2)
    command = ["nice", a.peers_python, SCRIPT, "--worker", name, spec_path]
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as packtune's actors get it
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    load = load_average()
    log(f"{name}: {' '.join(command)}  (load {load})")
    start, wall = run_timed(command, os.path.join(work, name + ".stdout"), os.path.join(work, name + ".stderr"),
                            name, env, a.peer_timeout)
    with open(os.path.join(work, name + ".stdout")) as f:
        out = json.loads(f.read().strip().splitlines()[-1])
    reports = [dict(r, t=r["time"] - start) for r in out["reports"]]
    result = {"wall_seconds": wall, "load_average_before": load, "load_average_after": load_average(),
              "trials": len({r["trial"] for r in reports}), "reports": len(reports),
              "_reports": reports, "_configs": {int(k): v for k, v in (out.get("trial_configs") or {}).items()},
              "best_val_accuracy": max((r["val_accuracy"] for r in reports), default=None),
              "best_trial": out.get("best_trial"), "test_accuracy": out.get("test_accuracy"),
              "curve": curve(reports), "versions": out.get("versions"),
              "first_report_seconds": min((r["t"] for r in reports), default=None)}
    log(f"{name}: {wall:.1f} s, best val {result['best_val_accuracy']}, test {result['test_accuracy']}")
    return result
