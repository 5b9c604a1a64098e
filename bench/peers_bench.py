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

The driver is this script and the modules beside it: peers_bench_ways.py runs each way,
peers_bench_summary.py turns the runs into the measures and prints them, peers_bench_page.py
writes --html's page, and peers_bench_worker.py is the peers' side (this script's --worker, run
in the peers' venv).
See docs/benchmarks.md.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GPU_WORKERS = 4  # peers' trials sharing one GPU: small models leave it idle one at a time
sys.path.insert(0, HERE)
from bench_lib import (DEFAULT_DATA_DIR, BenchError, add_peers_python_option, apply_preset,  # noqa: E402
                       hyperband_schedule, installed_plotly, parse_ways, resolve_data_dir, run_main,
                       set_data_sizes, sweep_trials)
from peers_bench_page import write_page  # noqa: E402
from peers_bench_summary import (best_report, noise_floor, print_noise_floor, print_summary,  # noqa: E402
                                 print_table, ratio, reverse_measure, same_model_seconds, summarize_seeds,
                                 time_to)
from peers_bench_ways import WAYS, drawn_configs, log, run_packtune, run_peer, sampler_of  # noqa: E402
from peers_bench_worker import worker  # noqa: E402


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


if __name__ == "__main__":
    sys.exit(main())
