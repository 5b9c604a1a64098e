#!/usr/bin/env python3
"""peers_bench: one Hyperband tuning problem four ways, in one run.

  packtune      packtune run with tuner hyperband, packing as the config says
  max_pack_1    the same with --max-pack 1
  ray_tune      Ray Tune, HyperBandScheduler, a PyTorch function trainable (1 CPU per trial,
                torch.set_num_threads(1), as many concurrent trials as cores)
  optuna        Optuna, HyperbandPruner, a PyTorch objective that reports and prunes every
                report_every epochs; one process per core sharing a JournalStorage file

With --device cuda every way trains on the GPU: packtune with one actor, Ray Tune giving each
trial 1/workers of the GPU, Optuna's processes sharing it (4 by default).

Same space (the config's), same model (bench/peer_loop.py re-implements packtune's `mlp` /
`cnn` in torch.nn), same batch size and normalisation, same data split (validation_size off
the end of the training file; test = the t10k files), same Hyperband schedule (eta 3, budgets
min_epochs ... max_epochs; rungs in training iterations of report_every epochs for the peers:
max_t / max_resource = max_epochs / report_every). After tuning each way evaluates its best
trial's last model on the test split (packtune does it itself: best.json "test").

By default the peers evaluate the configs packtune drew. --own-samplers lets each way draw its
own: packtune's sampler tpe against Optuna's TPESampler (its defaults), or with --own-samplers
random packtune's random draws against Optuna's RandomSampler; Ray Tune keeps its default
search (random draws) either way. --sweeps N runs N Hyperband sweeps' trials (packtune's
hyperband with trials N x one sweep; the peers as many trials): 3 by default with
--own-samplers, as TPE draws its first 10 configs at random. --packtune-sweeps M gives
packtune M sweeps instead, the peers keeping N: the measures are times to a peer's best, and
packtune, faster per trial, fits more trials in the same wall time. --order per_trial gives each
of packtune's trials its own data order, as each peer trial shuffles for itself.

Each way is timed from the start of its process to its exit, as a user waits. Prints per way:
wall seconds, best val_accuracy, test accuracy of the best trial, the curve of best
val_accuracy against wall time, the time to reach a target accuracy (default: the lowest of
the ways' bests) and the ratios against packtune.

The peers run in their own virtual environment (scripts/setup-peers.sh:
~/.cache/packtune/peers-venv, or $PACKTUNE_PEERS_PYTHON / --peers-python). The build writes
build/bench/peers_bench with the packtune binary and examples/fashion_mnist.json filled in.
See docs/benchmarks.md.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
WAYS = ("packtune", "max_pack_1", "ray_tune", "optuna")
GPU_WORKERS = 4  # peers' trials sharing one GPU: small models leave it idle one at a time
sys.path.insert(0, HERE)
from bench_lib import (DEFAULT_DATA_DIR, PAGE_END, BenchError, add_peers_python_option,  # noqa: E402
                       apply_preset, hyperband_schedule, installed_plotly, load_average, parse_ways, read_reports,
                       resolve_data_dir, run_main, set_data_sizes, sweep_trials, write_self_contained_page)
import bench_lib  # noqa: E402  (stdlib only, as this side)


def log(message):
    print(f"peers_bench: {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------
# The driver side (any python3; no torch needed)
# ------------------------------------------------------------------------------------------

def parse_args(argv, defaults):
    p = argparse.ArgumentParser(prog="peers_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default=defaults.get("config"), help="experiment config (model, space, seed)")
    p.add_argument("--packtune", default=defaults.get("packtune"), help="the packtune binary")
    p.add_argument("--min-epochs", type=float, help="Hyperband's min budget (default 0.25)")
    p.add_argument("--max-epochs", type=float, help="Hyperband's max budget (default 2.25)")
    p.add_argument("--eta", type=int, default=3, help="reduction factor (default 3)")
    p.add_argument("--tuner", choices=("hyperband", "async_hyperband"), default="hyperband",
                   help="packtune's tuner: hyperband (synchronous, as Ray's HyperBandScheduler) or "
                        "async_hyperband (asynchronous brackets, as Optuna's HyperbandPruner), on the same "
                        "number of trials (default hyperband)")
    p.add_argument("--eager-promotion", action="store_true",
                   help="packtune's ASHA rungs promote the best so far while fewer than eta results are in "
                        "(tuner setting eager_promotion, as Optuna's pruner does); needs --tuner async_hyperband")
    p.add_argument("--report-every", type=float,
                   help="epochs between reports, the peers' training iteration (default: min-epochs)")
    p.add_argument("--train-size", type=int, help="training images, 0 = all the validation split leaves")
    p.add_argument("--validation-size", type=int, help="validation images (default: the config's)")
    p.add_argument("--actors", type=int, help="packtune's local actors (default 2 on a CPU, 1 on a GPU: one per GPU)")
    p.add_argument("--max-pack", type=int, help="packtune's max_pack (default: the config's)")
    p.add_argument("--device", default="cpu",
                   help="cpu (default) | cuda | cuda:N: where every way trains (packtune's device; the "
                        "peers' torch device, Ray Tune giving each trial 1/workers of the GPU)")
    p.add_argument("--workers", type=int,
                   help="the peers' concurrent trials / processes (default: the cores on a CPU, "
                        f"{GPU_WORKERS} sharing a GPU)")
    p.add_argument("--seed", type=int, help="seed (default: the config's)")
    p.add_argument("--seeds", type=int, default=1,
                   help="run the whole comparison this many times, seeds --seed, --seed + 1, ...; one "
                        "sweep's outcome hangs on which configs a tuner keeps, so the summary gives each "
                        "peer's measure per seed and its median (default 1)")
    p.add_argument("--target", type=float, help="target val_accuracy (default: the lowest of the ways' bests)")
    p.add_argument("--own-samplers", nargs="?", const="tpe", choices=("tpe", "random"),
                   help="each way draws its own configs (default: the peers evaluate the configs packtune drew, "
                        "in its trial order: Ray Tune's points_to_evaluate, Optuna's enqueue_trial). tpe (the "
                        "default): packtune's sampler tpe against Optuna's TPESampler with its defaults; random: "
                        "packtune's random draws against Optuna's RandomSampler. Ray Tune keeps its default search "
                        "(BasicVariantGenerator, random draws) either way; leave it out with --ways packtune,optuna")
    p.add_argument("--sweeps", type=int,
                   help="Hyperband sweeps: packtune's hyperband tuner with trials = N x one sweep's trials (the "
                        "sweep repeats), the peers given as many trials (default 1; 3 with --own-samplers, as TPE "
                        "draws its first 10 configs at random)")
    p.add_argument("--packtune-sweeps", type=int, metavar="N",
                   help="with --own-samplers: packtune's sweeps, the peers keeping --sweeps (default: --sweeps). The "
                        "measure is time to the peer's best, so packtune may go on past the peers' trial count; "
                        "faster per trial, it reaches more trials in the same wall time")
    p.add_argument("--order", choices=("shared", "per_trial"),
                   help="packtune's data order (the config's data.order; default: the config's, else shared). "
                        "The peers' trials each shuffle for themselves, as per_trial does; with shared order "
                        "packtune's trials share one order's luck, and so its best report has less of it")
    p.add_argument("--ways", default=",".join(WAYS), help="comma-separated subset of " + ",".join(WAYS))
    p.add_argument("--data-dir", help="Fashion-MNIST's folder (default $PACKTUNE_DATA_DIR, else " + DEFAULT_DATA_DIR + ")")
    add_peers_python_option(p)
    p.add_argument("--quick", action="store_true", help="10,000 training images: a few minutes here")
    p.add_argument("--smoke", action="store_true",
                   help="1,024 training and 512 validation images, 0.25 ... 0.75 epochs (5 trials): checks every way runs")
    p.add_argument("--json", action="store_true", help="print one JSON object (progress goes to stderr)")
    p.add_argument("--keep", metavar="DIR", help="run in DIR and keep the outputs")
    p.add_argument("--peer-timeout", type=float, metavar="SECONDS",
                   help="kill a peer that has not finished after this long (default: none; --smoke: 240). "
                        "Ray Tune's HyperBandScheduler can leave every trial paused and wait forever")
    p.add_argument("--html", metavar="FILE",
                   help="also write FILE: one self-contained page (plotly.js inlined, opens offline) with "
                        "each way's best val_accuracy against wall time, its best trial's test accuracy "
                        "and the measures, per seed")
    p.add_argument("--plotly", default=defaults.get("plotly"),
                   help="plotly.js to inline into --html (default: the build's, else Debian's python3-plotly)")
    a = p.parse_args(argv)
    preset = {"min_epochs": 0.25, "max_epochs": 2.25, "train_size": 0}
    if a.quick:
        preset["train_size"] = 10000
    if a.smoke:
        preset = {"min_epochs": 0.25, "max_epochs": 0.75, "train_size": 1024, "validation_size": 512,
                  "peer_timeout": 240}
    apply_preset(a, preset)
    if a.report_every is None:
        a.report_every = a.min_epochs
    a.ways = parse_ways(p, a.ways, WAYS)
    iterations = a.max_epochs / a.report_every
    if abs(iterations - round(iterations)) > 1e-6 or abs(a.min_epochs / a.report_every - round(a.min_epochs / a.report_every)) > 1e-6:
        p.error("--min-epochs and --max-epochs must be multiples of --report-every")
    for name in ("config", "packtune"):
        if not getattr(a, name):
            p.error(f"--{name} is required when run from the source tree; build/bench/peers_bench fills it in")
    if a.eager_promotion and a.tuner == "hyperband":
        p.error("--eager-promotion: an ASHA setting; add --tuner async_hyperband")
    if a.seeds < 1:
        p.error(f"--seeds: expected 1 or more, got {a.seeds}")
    if a.sweeps is None:
        a.sweeps = 3 if a.own_samplers else 1
    if a.sweeps < 1:
        p.error(f"--sweeps: expected 1 or more, got {a.sweeps}")
    if a.packtune_sweeps is not None and not a.own_samplers:
        p.error("--packtune-sweeps: the peers evaluate packtune's own configs unless --own-samplers is given")
    if a.packtune_sweeps is None:
        a.packtune_sweeps = a.sweeps
    if a.packtune_sweeps < 1:
        p.error(f"--packtune-sweeps: expected 1 or more, got {a.packtune_sweeps}")
    if a.html:
        a.plotly = installed_plotly(a.plotly)
        if not a.plotly or not os.path.exists(a.plotly):
            p.error("--html needs plotly.js: install Debian's python3-plotly (scripts/setup.sh does) or pass --plotly FILE")
    a.data_dir = resolve_data_dir(a.data_dir)
    if a.device != "cpu" and not (a.device == "cuda" or (a.device.startswith("cuda:") and a.device[5:].isdigit())):
        p.error(f"--device: expected cpu, cuda or cuda:N, got {a.device!r}")
    if a.workers is None:
        a.workers = (os.cpu_count() or 2) if a.device == "cpu" else GPU_WORKERS
    if a.actors is None:
        a.actors = 2 if a.device == "cpu" else 1
    if a.workers < 1:
        p.error(f"--workers: expected 1 or more, got {a.workers}")
    return a


def packtune_tuner(a, sweep):
    """packtune's tuner block: --tuner over --packtune-sweeps sweeps of `sweep` trials, drawing
    with --own-samplers' sampler. The peers read its eta only."""
    tuner = {"name": a.tuner, "eta": a.eta}
    if a.tuner != "hyperband" or a.packtune_sweeps > 1:
        # hyperband without trials runs one whole sweep; with a multiple of it, that many sweeps.
        # The asynchronous tuner runs on as many trials as the sweeps have.
        tuner["trials"] = sweep * a.packtune_sweeps
    if a.eager_promotion:
        tuner["eager_promotion"] = True
    if a.own_samplers:
        tuner["sampler"] = a.own_samplers
    return tuner


def problem(a, work, sweep):
    """The one problem all four ways tune, as a packtune config; the peers read it too."""
    with open(a.config) as f:
        config = json.load(f)
    config["name"] = "peers_bench"
    if a.seed is not None:
        config["seed"] = a.seed
    config.setdefault("seed", 1)
    config["tuner"] = packtune_tuner(a, sweep)
    config["budget"] = {"unit": "epochs", "min": a.min_epochs, "max": a.max_epochs, "report_every": a.report_every}
    config["actors"] = a.actors
    config["device"] = a.device
    data = set_data_sizes(config, a.train_size, a.validation_size, a.max_pack, a.data_dir)
    if a.order is not None:
        data["order"] = a.order
    data.setdefault("validation_size", 10000)
    path = os.path.join(work, "problem.json")
    with open(path, "w") as f:
        json.dump(config, f, indent=2)
    return path, config


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
    command = ["nice", a.peers_python, os.path.abspath(__file__), "--worker", name, spec_path]
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


def same_config(a, b, space):
    """Whether two trials' configs agree on every sampled key (floats to 1e-9)."""
    for k in space:
        x, y = a.get(k), b.get(k)
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool):
            if not math.isclose(x, y, rel_tol=1e-9, abs_tol=0.0):
                return False
        elif x != y:
            return False
    return True


def best_report(reports):
    """The report with the highest val_accuracy, the earliest of equals."""
    scored = [r for r in reports if r.get("val_accuracy") is not None]
    return max(scored, key=lambda r: (r["val_accuracy"], -r["t"])) if scored else None


def same_model_seconds(base, config, budget, space):
    """When `base` (a packtune way) first reported a trial of `config` at `budget` or beyond:
    the same model as a peer's best, up to the trial's seed (None if it never trained it so far)."""
    trials = {t for t, c in base.get("_configs", {}).items() if same_config(c, config, space)}
    times = [r["t"] for r in base.get("_reports", []) if r["trial"] in trials and r["budget"] >= budget - 1e-9]
    return min(times) if times else None


def time_to(curve_points, target):
    for t, best in curve_points:
        if best >= target - 1e-12:
            return t
    return None


def ratio(x, y):
    return x / y if x is not None and y else None


def reverse_measure(base, way):
    """The strict measure the other way round: `way`'s time to packtune's (`base`'s) best over
    packtune's own time to it. A best val_accuracy is the top of many noisy reports; where
    neither way reaches the other's best, the race is to the noise more than to a model."""
    best = base.get("best_val_accuracy")
    if best is None:
        return {}
    its_time = time_to(way.get("curve", []), best)
    return {"packtune_best": best, "its_seconds_to_packtune_best": its_time,
            "it_over_packtune_to_packtune_best": ratio(its_time, time_to(base.get("curve", []), best))}


def bench(a):
    work = a.keep or tempfile.mkdtemp(prefix="peers_bench-")
    os.makedirs(work, exist_ok=True)
    try:
        sched = hyperband_schedule(a.packtune, a.min_epochs, a.max_epochs, a.eta)
        sweep = sweep_trials(sched)
        trials = sweep * a.sweeps
        config_path, config = problem(a, work, sweep)
        peers = [w for w in a.ways if w in ("ray_tune", "optuna")]
        if peers and not os.access(a.peers_python, os.X_OK):
            raise BenchError(f"no peers' python at {a.peers_python}: run scripts/setup-peers.sh, or pass --peers-python")
        ways, samplers = {}, {}
        configs = None  # what packtune drew, for the peers to evaluate
        for name in a.ways:
            if name == "packtune":
                ways[name] = run_packtune(a, config_path, work, name, None)
                if not a.own_samplers:
                    configs = drawn_configs(ways[name], config["space"], trials)
            elif name == "max_pack_1":
                ways[name] = run_packtune(a, config_path, work, name, 1)
            else:
                ways[name] = run_peer(a, name, config_path, trials, work, configs)
            samplers[name] = sampler_of(a, name, configs is not None)
        bests = [w["best_val_accuracy"] for w in ways.values() if w["best_val_accuracy"] is not None]
        target = a.target if a.target is not None else (min(bests) if bests else None)
        for w in ways.values():
            w["seconds_to_target"] = time_to(w["curve"], target) if target is not None else None
        base = ways.get("packtune", {})
        ratios = {}
        for name, w in ways.items():
            if name == "packtune":
                continue
            # The strict measure (docs/benchmarks.md): packtune's time to this way's own best over this way's time to it
            # (None where packtune never reached it).
            own_best = w["best_val_accuracy"]
            to_own_best = time_to(w["curve"], own_best) if own_best is not None else None
            packtune_to_it = time_to(base.get("curve", []), own_best) if own_best is not None else None
            ratios[name] = {"wall_over_packtune": ratio(w["wall_seconds"], base.get("wall_seconds")),
                            "to_target_over_packtune": ratio(w["seconds_to_target"], base.get("seconds_to_target")),
                            "its_best": own_best, "its_seconds_to_its_best": to_own_best,
                            "packtune_seconds_to_its_best": packtune_to_it,
                            "packtune_over_it_to_its_best": ratio(packtune_to_it, to_own_best)}
            ratios[name].update(reverse_measure(base, w))
            # The same model: the peer's best trial's config at that report's budget, which
            # packtune may have trained too (the same configs); its accuracy there differs by
            # the trial's seed and the framework's numerics, not by tuning.
            top = best_report(w.get("_reports", []))
            its_config = w.get("_configs", {}).get(top["trial"]) if top else None
            if its_config is not None and base:
                same = same_model_seconds(base, its_config, top["budget"], config["space"])
                ratios[name].update({"its_best_budget": top["budget"],
                                     "packtune_seconds_to_its_best_model": same,
                                     "packtune_over_it_to_its_best_model": ratio(same, to_own_best)})
        for w in ways.values():
            w.pop("_reports", None)
            w.pop("_configs", None)
        return {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(["peers_bench"] + sys.argv[1:]),
            "host": platform.node(), "cores": os.cpu_count(), "device": a.device,
            "config": a.config, "seed": config["seed"],
            "schedule": {"tuner": a.tuner + (" (eager promotion)" if a.eager_promotion else ""),
                         "eta": a.eta, "min_epochs": a.min_epochs, "max_epochs": a.max_epochs,
                         "report_every": a.report_every, "trials": trials, "sweeps": a.sweeps,
                         "packtune_sweeps": a.packtune_sweeps,
                         "packtune_order": config["data"].get("order", "shared"),
                         "sweep_trials": sweep,
                         "peers_max_t": round(a.max_epochs / a.report_every),
                         "peers_min_t": round(a.min_epochs / a.report_every)},
            "train_size": config["data"].get("train_size", 0), "validation_size": config["data"]["validation_size"],
            "test_size": 10000, "batch_size": config.get("model", {}).get("batch_size"),
            "actors": a.actors, "max_pack": config.get("max_pack"), "peer_workers": a.workers,
            "target": target, "ways": ways, "ratios": ratios,
            "same_configs": configs is not None, "samplers": samplers,
            "work_dir": work if a.keep else None,
        }
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


def fmt(x, spec, none="-"):
    return format(x, spec) if x is not None else none


def trials_text(s):
    """"17 trials", or "3 sweeps of 17 = 51 trials"."""
    sweeps = s.get("sweeps", 1)
    text = f"{s['trials']} trials" if sweeps == 1 else f"{sweeps} sweeps of {s['sweep_trials']} = {s['trials']} trials"
    own = s.get("packtune_sweeps", sweeps)
    if own != sweeps:
        text += f" (packtune: {own} sweeps = {own * s['sweep_trials']} trials)"
    if s.get("packtune_order", "shared") != "shared":
        text += f", packtune's data order {s['packtune_order']}"
    return text


def samplers_text(r, counts=True):
    """Which sampler drew each way's configs, in one line (with `counts`, how many configs
    packtune's TPE modelled)."""
    if r.get("same_configs"):
        return "the ones packtune drew (its sampler random), for every way"

    def modelled(w):
        n = r["ways"].get(w, {}).get("modelled_configs") if counts else None
        return f" ({n} of {r['ways'][w]['trials']} configs modelled, the rest drawn at random)" if n is not None else ""
    return "each way its own sampler: " + "; ".join(f"{w}: {text}{modelled(w)}" for w, text in r.get("samplers", {}).items())


def print_table(r):
    s = r["schedule"]
    print(f"Hyperband eta {s['eta']}, {s['min_epochs']:g} ... {s['max_epochs']:g} epochs, {trials_text(s)}, "
          f"reports every {s['report_every']:g} epochs (peers: max_t {s['peers_max_t']}); "
          f"train {r['train_size'] or 'all'}, validation {r['validation_size']}, test {r['test_size']}; "
          f"seed {r['seed']}; {r.get('device', 'cpu')}; packtune {r['actors']} actors, max_pack {r['max_pack']}; peers {r['peer_workers']} workers")
    print(f"{r['date']}, {r['cores']} cores; target val_accuracy {fmt(r['target'], '.4f')}\n")
    print(f"{'way':<11} {'wall s':>8} {'/ptune':>7} {'best val':>9} {'test':>7} {'to target s':>12} {'/ptune':>7} "
          f"{'trials':>6}  load before/after")
    for name in WAYS:
        w = r["ways"].get(name)
        if not w:
            continue
        rr = r["ratios"].get(name, {})
        print(f"{name:<11} {w['wall_seconds']:8.1f} {fmt(rr.get('wall_over_packtune'), '.2f', '1' if name == 'packtune' else '-'):>7} "
              f"{fmt(w['best_val_accuracy'], '.4f'):>9} {fmt(w['test_accuracy'], '.4f'):>7} "
              f"{fmt(w['seconds_to_target'], '.1f'):>12} "
              f"{fmt(rr.get('to_target_over_packtune'), '.2f', '1' if name == 'packtune' else '-'):>7} "
              f"{w['trials']:>6}  {w['load_average_before'][0] if w['load_average_before'] else '-'}"
              f"/{w['load_average_after'][0] if w['load_average_after'] else '-'}")
    print(f"\nconfigs: {samplers_text(r)}")
    for name, rr in r["ratios"].items():
        if name == "max_pack_1" or rr.get("its_best") is None:
            continue
        print(f"{name}'s best {rr['its_best']:.4f}: it took {fmt(rr['its_seconds_to_its_best'], '.1f')} s, packtune "
              + (f"{rr['packtune_seconds_to_its_best']:.1f} s ({rr['packtune_over_it_to_its_best']:.2f} of its time)"
                 if rr.get("packtune_seconds_to_its_best") is not None else "never reached it"))
        if rr.get("packtune_best") is not None:
            back = rr["its_seconds_to_packtune_best"]
            print(f"  packtune's best {rr['packtune_best']:.4f}: {name} "
                  + (f"{back:.1f} s ({rr['it_over_packtune_to_packtune_best']:.2f} of packtune's time)"
                     if back is not None else "never reached it"))
        if "packtune_seconds_to_its_best_model" in rr:
            same = rr["packtune_seconds_to_its_best_model"]
            print(f"  the same model (its best config at budget {rr['its_best_budget']:g}): packtune "
                  + (f"{same:.1f} s ({rr['packtune_over_it_to_its_best_model']:.2f} of its time)" if same is not None
                     else "never trained it that far"))


def median_measure(values):
    """The median of packtune's time over a peer's to the peer's best, a sitting where packtune
    never reached it counting as worse than any ratio (None when those are half or more)."""
    ranked = sorted(values, key=lambda v: (v is None, v if v is not None else 0.0))
    middle = ranked[(len(ranked) - 1) // 2:len(ranked) // 2 + 1]
    if any(v is None for v in middle):
        return None
    return sum(middle) / len(middle)


def summarize_seeds(runs):
    """Per way that is not packtune: the strict measure in each sitting and its median."""
    out = {}
    for name in WAYS:
        if name == "packtune" or not all(name in r["ratios"] for r in runs):
            continue
        measures = [r["ratios"][name]["packtune_over_it_to_its_best"] for r in runs]
        out[name] = {"seeds": [r["seed"] for r in runs], "sampler": runs[0].get("samplers", {}).get(name),
                     "its_bests": [r["ratios"][name]["its_best"] for r in runs],
                     "packtune_over_it_to_its_best": measures,
                     "reached": sum(m is not None for m in measures),
                     "median": median_measure(measures),
                     "wall_over_packtune": [r["ratios"][name]["wall_over_packtune"] for r in runs]}
        if all("it_over_packtune_to_packtune_best" in r["ratios"][name] for r in runs):
            back = [r["ratios"][name]["it_over_packtune_to_packtune_best"] for r in runs]
            out[name].update({"it_over_packtune_to_packtune_best": back,
                              "reverse_reached": sum(m is not None for m in back),
                              "reverse_median": median_measure(back)})
        if all("packtune_over_it_to_its_best_model" in r["ratios"][name] for r in runs):
            models = [r["ratios"][name]["packtune_over_it_to_its_best_model"] for r in runs]
            out[name].update({"packtune_over_it_to_its_best_model": models,
                              "model_reached": sum(m is not None for m in models),
                              "model_median": median_measure(models)})
    return out


def noise_floor(runs):
    """Per way: the strict measure of its run in each seed against its own run in the next seed
    (the last against the first), that is seed S's time to seed S+1's best over seed S+1's time
    to it. Two runs of one tool differ only by seed, so this is what the measure gives for two
    equal tools. The run with the lower best never reaches the other's, so about half of these
    read never."""
    out = {}
    if len(runs) < 2:
        return out
    for name in WAYS:
        if not all(name in r["ways"] for r in runs):
            continue
        pairs, measures = [], []
        for i, r in enumerate(runs):
            other = runs[(i + 1) % len(runs)]
            best = other["ways"][name].get("best_val_accuracy")
            pairs.append([r["seed"], other["seed"]])
            if best is None:
                measures.append(None)
                continue
            measures.append(ratio(time_to(r["ways"][name].get("curve", []), best),
                                  time_to(other["ways"][name].get("curve", []), best)))
        out[name] = {"pairs": pairs, "measures": measures, "reached": sum(m is not None for m in measures),
                     "median": median_measure(measures)}
    return out


def print_noise_floor(floor):
    if not floor:
        return
    print("noise floor: each way against itself, seed S's time to seed S+1's best over seed S+1's own time to it")
    for name, f in floor.items():
        per = ", ".join(fmt(m, ".2f", "never") for m in f["measures"])
        print(f"{name:<11} {per}; median {fmt(f['median'], '.2f', 'never')}; reached in {f['reached']} of "
              f"{len(f['measures'])}")


def print_summary(summary, runs):
    print(f"\n{len(runs)} sittings, seeds {', '.join(str(r['seed']) for r in runs)}, {trials_text(runs[0]['schedule'])}; "
          f"configs: {samplers_text(runs[0], counts=False)}")
    modelled = [r["ways"].get("packtune", {}).get("modelled_configs") for r in runs]
    if all(n is not None for n in modelled):
        print(f"packtune's TPE modelled {', '.join(map(str, modelled))} of {runs[0]['schedule']['trials']} configs")
    print("strict: packtune's time to each peer's best over the peer's own time to it (median over the seeds, "
          "a seed where packtune never reached it ranking last)")
    for name, s in summary.items():
        per = ", ".join(fmt(m, ".2f", "never") for m in s["packtune_over_it_to_its_best"])
        print(f"{name:<11} {per}; median {fmt(s['median'], '.2f', 'never')}; packtune reached its best in "
              f"{s['reached']} of {len(runs)}")
        if "reverse_median" in s:
            per = ", ".join(fmt(m, ".2f", "never") for m in s["it_over_packtune_to_packtune_best"])
            print(f"{'':<11} the other way round, its time to packtune's best over packtune's: {per}; median "
                  f"{fmt(s['reverse_median'], '.2f', 'never')}; it reached packtune's best in {s['reverse_reached']} "
                  f"of {len(runs)}")
        if "model_median" in s:
            per = ", ".join(fmt(m, ".2f", "never") for m in s["packtune_over_it_to_its_best_model"])
            print(f"{'':<11} its best model (config and budget): {per}; median "
                  f"{fmt(s['model_median'], '.2f', 'never')}; trained by packtune in {s['model_reached']} of {len(runs)}")


PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>peers_bench</title>
<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{padding:2px 8px;
border-bottom:1px solid #ddd;text-align:right}th:first-child,td:first-child{text-align:left}
.chart{width:100%;max-width:1000px;height:420px}</style>
<script>var pageErrors = [];
window.addEventListener('error', function (e) { pageErrors.push(String(e.message)); });</script>
<script>/*plotly*/</script></head>
<body><h1>peers_bench</h1><p id="what"></p><div id="sittings"></div>
<script>
var bench = /*data*/;
var colors = {packtune: '#1f77b4', max_pack_1: '#17becf', ray_tune: '#ff7f0e', optuna: '#2ca02c'};
var drawn = {};  // chart id -> points drawn, for #page-check
function cell(x, digits) { return x === null || x === undefined ? 'never' : Number(x).toFixed(digits); }
document.getElementById('what').textContent = bench.what;
bench.runs.forEach(function (run, i) {
  var box = document.createElement('div');
  var h = document.createElement('h2');
  h.textContent = 'seed ' + run.seed + ' (' + run.date + ')';
  box.appendChild(h);
  var chart = document.createElement('div');
  chart.className = 'chart';
  chart.id = 'chart-' + i;
  box.appendChild(chart);
  var rows = '<tr><th>way</th><th>wall s</th><th>best val</th><th>test of the best</th>' +
             '<th>strict: packtune over it</th><th>same model: packtune over it</th></tr>';
  var traces = [];
  Object.keys(run.ways).forEach(function (name) {
    var w = run.ways[name], r = run.ratios[name] || {};
    traces.push({name: name + ': best val_accuracy', x: w.curve.map(function (p) { return p[0]; }),
                 y: w.curve.map(function (p) { return p[1]; }), mode: 'lines+markers',
                 line: {shape: 'hv', color: colors[name]}, legendgroup: name});
    if (w.test_accuracy !== null && w.test_accuracy !== undefined) {
      traces.push({name: name + ': test accuracy of its best', x: [w.wall_seconds], y: [w.test_accuracy],
                   mode: 'markers', marker: {symbol: 'star', size: 12, color: colors[name]}, legendgroup: name});
    }
    rows += '<tr><td>' + name + '</td><td>' + cell(w.wall_seconds, 1) + '</td><td>' + cell(w.best_val_accuracy, 4) +
            '</td><td>' + cell(w.test_accuracy, 4) + '</td><td>' +
            (name === 'packtune' ? '' : cell(r.packtune_over_it_to_its_best, 2)) + '</td><td>' +
            (name === 'packtune' || !('packtune_over_it_to_its_best_model' in r) ? '' :
             cell(r.packtune_over_it_to_its_best_model, 2)) + '</td></tr>';
  });
  var table = document.createElement('table');
  table.innerHTML = rows;
  box.appendChild(table);
  document.getElementById('sittings').appendChild(box);
  // From a little below the lowest final best: the first reports (a tenth of the classes right)
  // would squeeze the curves that matter into the top of the chart.
  var finals = Object.keys(run.ways).map(function (n) { return run.ways[n].best_val_accuracy; })
                     .filter(function (v) { return v !== null && v !== undefined; });
  var low = finals.length ? Math.min.apply(null, finals) - 0.1 : 0;
  var high = finals.length ? Math.min(1, Math.max.apply(null, finals) + 0.02) : 1;
  Plotly.newPlot(chart.id, traces, {title: {text: 'best val_accuracy so far; stars: test accuracy of each best trial',
                                            x: 0.02, xanchor: 'left'},
                 xaxis: {title: 'seconds since the way started'}, yaxis: {title: 'accuracy', range: [low, high]},
                 margin: {t: 40}}, {responsive: true, displaylogo: false});
  drawn[chart.id] = document.getElementById(chart.id).querySelectorAll('.scatterlayer .point').length;
});
""" + PAGE_END


def write_page(path, runs, plotly_path):
    """One self-contained page: plotly.js and the figures inlined, nothing fetched when it opens."""
    first = runs[0]
    s = first["schedule"]
    what = (f"{s['tuner']} eta {s['eta']}, {s['min_epochs']:g} ... {s['max_epochs']:g} epochs, {trials_text(s)}; "
            f"train {first['train_size'] or 'all'}, validation {first['validation_size']}, test {first['test_size']}; "
            f"packtune {first['actors']} actors, max_pack {first['max_pack']}; peers {first['peer_workers']} workers; "
            f"configs: {samplers_text(first, counts=len(runs) == 1)}; "
            f"{first['cores']} cores, {first['host']}")
    write_self_contained_page(path, PAGE, {"what": what, "runs": runs}, plotly_path)


def sittings(a):
    """bench(a) once per seed: --seed, --seed + 1, ... (each kept in DIR/seed-S under --keep)."""
    if a.seeds == 1:
        return [bench(a)]
    runs = []
    with open(a.config) as f:
        first = a.seed if a.seed is not None else json.load(f).get("seed", 1)
    keep = a.keep
    for i in range(a.seeds):
        a.seed = first + i
        a.keep = os.path.join(keep, f"seed-{a.seed}") if keep else None
        log(f"sitting {i + 1} of {a.seeds}: seed {a.seed}")
        runs.append(bench(a))
        if not a.json:
            print_table(runs[-1])
            print()
    return runs


def main(argv=None, **defaults):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        return worker(argv[1], argv[2])
    a = parse_args(argv, defaults)
    rc, runs = run_main("peers_bench", sittings, a)
    if rc:
        return rc
    if a.html:
        write_page(a.html, runs, a.plotly)
        log(f"wrote {a.html}")
    if len(runs) == 1:
        if a.json:
            print(json.dumps(runs[0], indent=2))
        else:
            print_table(runs[0])
        return 0
    summary = summarize_seeds(runs)
    floor = noise_floor(runs)
    if a.json:
        print(json.dumps({"runs": runs, "summary": summary, "noise_floor": floor}, indent=2))
    else:
        print_summary(summary, runs)
        print_noise_floor(floor)
    return 0


# ------------------------------------------------------------------------------------------
# The peers' side: runs in the peers' venv (torch, ray[tune], optuna)
# ------------------------------------------------------------------------------------------

def load_data(config, device=None):
    """(train_x, train_y, val_x, val_y, test_x, test_y) as packtune splits and normalises them, on
    `device` (default: the problem's)."""
    sys.path.insert(0, HERE)
    import peer_loop
    data = config["data"]
    train_size, validation_size = int(data.get("train_size", 0)), int(data.get("validation_size", 10000))
    wanted = train_size + validation_size if train_size > 0 else 0
    images = peer_loop.read_idx(peer_loop.find_file(data["dir"], "train-images-idx3-ubyte"), wanted)
    labels = peer_loop.read_idx(peer_loop.find_file(data["dir"], "train-labels-idx1-ubyte"), wanted)
    n = min(len(images), len(labels))
    train_end = n - validation_size
    pixels, targets = images[:n].unsqueeze(1), labels[:n].long()
    train = pixels[:train_end].float().div_(255.0)
    mean, std = train.mean().item(), train.std().item()
    test_images = peer_loop.read_idx(peer_loop.find_file(data["dir"], "t10k-images-idx3-ubyte"))
    test_labels = peer_loop.read_idx(peer_loop.find_file(data["dir"], "t10k-labels-idx1-ubyte"))

    device = device or peer_device(config)

    def norm(x):
        return x.float().div_(255.0).sub_(mean).div_(std).to(device)

    # On a GPU the whole split lives there, as a PyTorch user keeps a data set this small.
    return (norm(pixels[:train_end]), targets[:train_end].to(device), norm(pixels[train_end:n]),
            targets[train_end:n].to(device), norm(test_images.unsqueeze(1)), test_labels.long().to(device))


def peer_device(config):
    import torch
    return torch.device(config.get("device", "cpu"))


class Trainer:
    """One trial's model trained report_every epochs at a time, as packtune's trial runner
    (peer_loop.train_trial): an epoch = floor(train / batch) steps, a fresh permutation each
    epoch, the whole validation split evaluated at each report."""

    def __init__(self, params, config, seed):
        import torch
        sys.path.insert(0, HERE)
        import peer_loop
        self.torch, self.peer_loop = torch, peer_loop
        self.c = dict(config.get("model", {}))
        self.c.update(params)
        torch.manual_seed(seed)
        self.device = peer_device(config)
        self.model = peer_loop.build_model(self.c).to(self.device)
        self.optimizer = peer_loop.build_optimizer(self.c, self.model.parameters())
        self.batch = int(self.c.get("batch_size", 128))
        self.step, self.perm = 0, None

    def state(self):
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(), "step": self.step,
                "rng": self.torch.get_rng_state()}

    def load(self, state):
        self.model.load_state_dict(state["model"])  # load_state_dict copies onto the model's device
        self.optimizer.load_state_dict(state["optimizer"])
        self.step = state["step"]
        self.torch.set_rng_state(state["rng"])

    def train_to(self, epochs, train_x, train_y):
        torch, F = self.torch, self.torch.nn.functional
        n = len(train_x)
        per_epoch, size = max(1, n // self.batch), min(self.batch, n)
        until = max(1, round(epochs * per_epoch))
        while self.step < until:
            k = self.step % per_epoch
            if k == 0 or self.perm is None:
                # Drawn by the CPU generator, whose state a checkpoint keeps, then moved once an epoch.
                self.perm = torch.randperm(n).to(self.device)
            index = self.perm[k * size:(k + 1) * size]
            loss = F.cross_entropy(self.model(train_x[index]), train_y[index])
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.step += 1

    def accuracy(self, x, y):
        return self.peer_loop.evaluate(self.model, x, y)[1]


def versions():
    out = {}
    for name in ("torch", "ray", "optuna"):
        try:
            out[name] = __import__(name).__version__
        except Exception:
            pass
    return out


def ray_space(space):
    from ray import tune
    out = {}
    for k, d in space.items():
        t = d["type"]
        if t == "loguniform":
            out[k] = tune.loguniform(d["low"], d["high"])
        elif t == "uniform":
            out[k] = tune.uniform(d["low"], d["high"])
        elif t == "choice":
            out[k] = tune.choice(d["values"])
        elif t == "randint":
            out[k] = tune.randint(d["low"], d["high"] + 1)
        else:
            raise SystemExit(f"peers_bench: space type {t!r} not mapped for Ray Tune")
    return out


def optuna_params(trial, space):
    out = {}
    for k, d in space.items():
        t = d["type"]
        if t in ("loguniform", "uniform"):
            out[k] = trial.suggest_float(k, d["low"], d["high"], log=(t == "loguniform"))
        elif t == "choice":
            out[k] = trial.suggest_categorical(k, d["values"])
        elif t == "randint":
            out[k] = trial.suggest_int(k, d["low"], d["high"])
        else:
            raise SystemExit(f"peers_bench: space type {t!r} not mapped for Optuna")
    return out


def ray_trainable(config, data=None, problem=None):
    """A function trainable as Ray Tune's docs write one: reports val accuracy every
    report_every epochs with a checkpoint, and resumes from the checkpoint when
    HyperBandScheduler unpauses it."""
    import torch
    from ray import tune
    torch.set_num_threads(1)
    train_x, train_y, val_x, val_y = (x.to(peer_device(problem)) for x in data)
    budget = problem["budget"]
    seed = problem["seed"] * 1000 + zlib.crc32(tune.get_context().get_trial_id().encode()) % 1000
    trainer = Trainer(config, problem, seed)
    checkpoint = tune.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as d:
            trainer.load(torch.load(os.path.join(d, "state.pt"), map_location=trainer.device, weights_only=False))
    every, iteration = budget["report_every"], 0
    per_epoch = max(1, len(train_x) // trainer.batch)
    iteration = round(trainer.step / per_epoch / every) if trainer.step else 0
    while iteration * every < budget["max"] - 1e-9:
        iteration += 1
        trainer.train_to(iteration * every, train_x, train_y)
        acc = trainer.accuracy(val_x, val_y)
        with tempfile.TemporaryDirectory() as d:
            torch.save(trainer.state(), os.path.join(d, "state.pt"))
            tune.report({"val_accuracy": acc, "epochs": iteration * every, "time": time.time()},
                        checkpoint=tune.Checkpoint.from_directory(d))


def worker_ray(spec, problem, data):
    import ray
    import torch
    from ray import tune
    from ray.tune.schedulers import HyperBandScheduler
    from ray.tune.search import BasicVariantGenerator
    budget = problem["budget"]
    max_t = round(budget["max"] / budget["report_every"])
    gpu = peer_device(problem).type == "cuda"
    ray.init(num_cpus=spec["workers"], num_gpus=1 if gpu else 0, include_dashboard=False, log_to_driver=False)
    scheduler = HyperBandScheduler(time_attr="training_iteration", max_t=max_t, reduction_factor=problem["tuner"]["eta"])
    trainable = tune.with_resources(
        tune.with_parameters(ray_trainable, data=data[:4], problem=problem),
        # Fractional GPUs, as Ray Tune's docs pack several small trials on one GPU.
        {"cpu": 1, "gpu": 1.0 / spec["workers"]} if gpu else {"cpu": 1})
    tuner = tune.Tuner(
        trainable,
        param_space=ray_space(problem["space"]),
        tune_config=tune.TuneConfig(metric="val_accuracy", mode="max", scheduler=scheduler,
                                    num_samples=spec["trials"],
                                    search_alg=BasicVariantGenerator(points_to_evaluate=spec.get("configs"),
                                                                     random_state=problem["seed"])),
        run_config=tune.RunConfig(storage_path=os.path.abspath(spec["work"]), name="ray",
                                  checkpoint_config=tune.CheckpointConfig(num_to_keep=1), verbose=0))
    results = tuner.fit()
    reports = []
    for i, r in enumerate(results):
        if r.metrics_dataframe is None:
            continue
        for _, row in r.metrics_dataframe.iterrows():
            reports.append({"trial": i, "budget": float(row["epochs"]), "val_accuracy": float(row["val_accuracy"]),
                            "time": float(row["time"])})
    best = results.get_best_result(metric="val_accuracy", mode="max", scope="all")
    torch.set_num_threads(spec["workers"])
    trainer = Trainer(best.config, problem, 0)
    with best.checkpoint.as_directory() as d:
        trainer.load(torch.load(os.path.join(d, "state.pt"), map_location=trainer.device, weights_only=False))
    test = trainer.accuracy(data[4].to(trainer.device), data[5].to(trainer.device))
    best_index = next((i for i, r in enumerate(results) if r.path == best.path), None)
    trial_configs = {i: r.config for i, r in enumerate(results)}
    ray.shutdown()
    return {"reports": reports, "best_trial": best_index, "best_config": best.config, "test_accuracy": test,
            "trial_configs": trial_configs}


def hyperband_pruner(problem):
    """Optuna's HyperbandPruner with packtune's schedule, in report_every steps."""
    import optuna
    budget = problem["budget"]
    return optuna.pruners.HyperbandPruner(min_resource=round(budget["min"] / budget["report_every"]),
                                          max_resource=round(budget["max"] / budget["report_every"]),
                                          reduction_factor=problem["tuner"]["eta"])


def worker_optuna_process(spec_path, index):
    """One of the Optuna processes sharing the study (Optuna's multi-process optimisation)."""
    import optuna
    import torch
    torch.set_num_threads(1)
    with open(spec_path) as f:
        spec = json.load(f)
    with open(spec["problem"]) as f:
        problem = json.load(f)
    train_x, train_y, val_x, val_y, _, _ = load_data(problem)
    budget = problem["budget"]
    every, max_r = budget["report_every"], round(budget["max"] / budget["report_every"])
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(os.path.join(spec["work"], "journal.log")))
    # Under --own-samplers tpe, TPESampler with Optuna's defaults. Its HyperbandPruner hands the
    # sampler a view of the new trial's bracket, but Optuna 5.0's TPE counts and models the trials
    # of every bracket (it reads them through Study._get_trials, which that view leaves unfiltered).
    seed = problem["seed"] * 1000 + index
    sampler = (optuna.samplers.TPESampler(seed=seed) if spec.get("sampler") == "tpe"
               else optuna.samplers.RandomSampler(seed=seed))
    study = optuna.load_study(study_name="peers_bench", storage=storage, pruner=hyperband_pruner(problem),
                              sampler=sampler)
    log_path = os.path.join(spec["work"], f"reports-{index}.jsonl")

    def objective(trial):
        params = optuna_params(trial, problem["space"])
        trainer = Trainer(params, problem, problem["seed"] * 1000 + trial.number)
        acc = None
        try:
            for step in range(1, max_r + 1):
                trainer.train_to(step * every, train_x, train_y)
                acc = trainer.accuracy(val_x, val_y)
                with open(log_path, "a") as f:
                    f.write(json.dumps({"trial": trial.number, "budget": step * every, "val_accuracy": acc,
                                        "time": time.time()}) + "\n")
                trial.report(acc, step)
                if trial.should_prune():
                    raise optuna.TrialPruned()
        finally:
            torch.save(trainer.model.state_dict(), os.path.join(spec["work"], f"model-{trial.number}.pt"))
        return acc

    study.optimize(objective, callbacks=[optuna.study.MaxTrialsCallback(
        spec["trials"], states=(optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED))])
    return 0


def worker_optuna(spec, spec_path, problem, data):
    import optuna
    import torch
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(os.path.join(spec["work"], "journal.log")))
    study = optuna.create_study(study_name="peers_bench", storage=storage, direction="maximize",
                                pruner=hyperband_pruner(problem))
    for params in spec.get("configs") or []:
        study.enqueue_trial(params)  # the processes take them in this order, before sampling
    # The pruner is not stored with the study: each process builds the same one.
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", "optuna_process", spec_path, str(i)])
             for i in range(spec["workers"])]
    if any(p.wait() != 0 for p in procs):
        raise SystemExit("peers_bench: an Optuna process failed")
    reports = []
    for i in range(spec["workers"]):
        path = os.path.join(spec["work"], f"reports-{i}.jsonl")
        if os.path.exists(path):
            with open(path) as f:
                reports += [json.loads(line) for line in f if line.strip()]
    best_trial = max(reports, key=lambda r: r["val_accuracy"])["trial"]
    study = optuna.load_study(study_name="peers_bench", storage=storage)
    params = study.trials[best_trial].params
    torch.set_num_threads(spec["workers"])
    trainer = Trainer(params, problem, 0)
    trainer.model.load_state_dict(torch.load(os.path.join(spec["work"], f"model-{best_trial}.pt"),
                                             map_location=trainer.device))
    return {"reports": reports, "best_trial": best_trial, "best_config": params,
            "test_accuracy": trainer.accuracy(data[4], data[5]),
            "trial_configs": {t.number: t.params for t in study.trials}}


def worker(name, spec_path, *rest):
    if name == "optuna_process":
        return worker_optuna_process(spec_path, int(sys.argv[-1]))
    with open(spec_path) as f:
        spec = json.load(f)
    with open(spec["problem"]) as f:
        problem = json.load(f)
    # Ray Tune hands the data to its trials through its object store: CPU tensors, moved by each trial.
    data = load_data(problem, "cpu" if name == "ray_tune" else None)
    if name == "ray_tune":
        out = worker_ray(spec, problem, data)
    elif name == "optuna":
        out = worker_optuna(spec, spec_path, problem, data)
    else:
        raise SystemExit(f"peers_bench: unknown worker {name!r}")
    out["versions"] = versions()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
