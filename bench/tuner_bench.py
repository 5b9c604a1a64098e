#!/usr/bin/env python3
"""tuner_bench: packtune's tuners against Optuna and DEHB on multi-fidelity test functions.

Every tool tunes the same functions (bench/tuner_functions.py: counting ones, multi-fidelity
Branin and Hartmann-6, each minimised with a known optimum) in the same simulated time:

  packtune     random, asha, hyperband, async_hyperband, each with the random sampler and with
               "sampler": "tpe", run by `packtune simulate --objective exec:...` (the real tuner;
               the function answers over the exec protocol)
  optuna_tpe   Optuna's TPESampler with its HyperbandPruner
  optuna_random  Optuna's RandomSampler with its HyperbandPruner
  dehb         DEHB (Awad et al., IJCAI 2021) from PyPI, where it installs

The time model is packtune simulate's, and the peers are simulated with it here: W workers; a
job takes simulated time equal to the budget it adds (a trial resumed from 9 to 27 takes 18,
a new one trained to 9 takes 9). Optuna's trials report at every rung budget and continue
unless pruned, so they resume; DEHB trains each of its configs from scratch at the fidelity it
asks, so its jobs cost the whole fidelity. Each tool runs until the time budget T (a multiple
of the max budget; W workers can train W * multiple configs to the max budget in T); nothing
that ends after T counts.

Regret at time t = (the best value any trial reported at the max budget by t) - f*. Only the
max budget counts, for every tool alike: the multi-fidelity Branin and Hartmann are biased at
lower budgets (a low-budget value can lie below f*), and a tuner's answer is a config trained to
the full budget. Before the first max-budget result the regret is undefined (infinite).

Per function the output gives each tool's regret trace and final regret per seed, the median
regret over the seeds on a grid of times, the mean rank of each tool's final regret per seed
(ties share ranks), and, for packtune's tpe tuners, when their median regret first reaches the
median final regret of packtune's random search, as a fraction of T.

The peers run in their own venvs (scripts/setup-peers.sh): Optuna in ~/.cache/packtune/peers-venv
($PACKTUNE_PEERS_PYTHON / --peers-python), DEHB in ~/.cache/packtune/dehb-venv
($PACKTUNE_DEHB_PYTHON / --dehb-python); a peer that does not import is skipped with a note.
The functions need numpy: --python (default /usr/bin/python3, Debian's) serves them to packtune.
The build writes build/bench/tuner_bench with this build's packtune and plotly.js filled in.

The driver is this script and the modules beside it: tuner_bench_runs.py runs every tool,
tuner_bench_rules.py holds the regret, median and rank rules, tuner_bench_page.py writes the
page, and tuner_bench_worker.py is the peers' side (this script's --worker, run in a peer's venv).
See docs/benchmarks.md.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# DEHB pins numpy < 2, which Ray Tune's pyarrow refuses: it gets a venv of its own, apart from the
# peers' one (bench_lib.DEFAULT_PEERS_PYTHON).
DEFAULT_DEHB_PYTHON = os.path.expanduser("~/.cache/packtune/dehb-venv/bin/python")
PACKTUNE_TUNERS = ("random", "asha", "hyperband", "async_hyperband")
sys.path.insert(0, HERE)
from bench_lib import add_peers_python_option, installed_plotly, run_main  # noqa: E402  (stdlib only)
from tuner_bench_page import write_page  # noqa: E402
from tuner_bench_runs import PEERS, bench, log  # noqa: E402
from tuner_bench_worker import worker  # noqa: E402


def packtune_tools():
    return [t + suffix for t in PACKTUNE_TUNERS for suffix in ("", "+tpe")]


def parse_args(argv, defaults):
    p = argparse.ArgumentParser(prog="tuner_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--packtune", default=defaults.get("packtune"), help="the packtune binary")
    p.add_argument("--functions", default="counting_ones,branin,hartmann6",
                   help="comma-separated functions of bench/tuner_functions.py (default all three)")
    p.add_argument("--tools", default=None,
                   help="comma-separated tools: packtune's " + ",".join(packtune_tools()) + ", " +
                        ",".join(PEERS) + "; 'packtune' means all eight (default: all)")
    p.add_argument("--seeds", type=int, default=None, help="seeds per function and tool: 1 ... N (default 20)")
    p.add_argument("--first-seed", type=int, default=1, help="the first seed (default 1)")
    p.add_argument("--workers", type=int, default=4, help="simulated workers of every tool (default 4)")
    p.add_argument("--time-budget", type=float, default=None,
                   help="simulated time per run as a multiple of the function's max budget: each worker could "
                        "train this many configs to the max budget (default 20)")
    p.add_argument("--jobs", type=int, default=None,
                   help="runs at once on this machine (default: the cores); simulated time does not depend on it")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="write DIR/tuner_bench.json and DIR/tuner_bench.html (default: the current folder)")
    p.add_argument("--reuse", metavar="JSON",
                   help="take the peers' runs an earlier tuner_bench.json holds (same workers, time budget and "
                        "eta) instead of running them again; packtune's always run, e.g. after a rebuild")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run: 2 seeds and time budget 2 unless given (seconds)")
    p.add_argument("--python", default=os.environ.get("PACKTUNE_FUNCTIONS_PYTHON", "/usr/bin/python3"),
                   help="python with numpy that serves the functions to packtune (default /usr/bin/python3)")
    add_peers_python_option(p)
    p.add_argument("--dehb-python", default=os.environ.get("PACKTUNE_DEHB_PYTHON", DEFAULT_DEHB_PYTHON),
                   help="python with dehb (default $PACKTUNE_DEHB_PYTHON, else " + DEFAULT_DEHB_PYTHON + ")")
    p.add_argument("--plotly", default=defaults.get("plotly"),
                   help="plotly.js to inline into the page (default: the build's, else Debian's python3-plotly)")
    a = p.parse_args(argv)
    if a.seeds is None:
        a.seeds = 2 if a.quick else 20
    if a.time_budget is None:
        a.time_budget = 2.0 if a.quick else 20.0
    if not a.packtune:
        p.error("--packtune is required when run from the source tree; build/bench/tuner_bench fills it in")
    if a.seeds < 1 or a.workers < 1 or a.time_budget <= 0:
        p.error("--seeds and --workers must be >= 1 and --time-budget > 0")
    a.functions = [f for f in a.functions.split(",") if f]
    tools = []
    for t in (a.tools or ",".join(["packtune", *PEERS])).split(","):
        if t == "packtune":
            tools += packtune_tools()
        elif t in packtune_tools() or t in PEERS:
            tools.append(t)
        elif t:
            p.error(f"--tools: unknown tool {t!r}")
    a.tools = list(dict.fromkeys(tools))
    a.jobs = a.jobs or os.cpu_count() or 1
    a.out = a.out or os.getcwd()
    if a.plotly and not os.path.exists(a.plotly):
        p.error(f"--plotly: no such file {a.plotly}")
    a.plotly = installed_plotly(a.plotly)
    return a


def fmt(x, spec=".3g"):
    return "never" if x is None else format(x, spec)


def print_table(r):
    tools = r["tools"]
    print(f"tuner_bench {r['date']}: {len(r['seeds'])} seeds, {r['workers']} workers, "
          f"time budget {r['time_budget']:g} x max budget; wall {r['wall_seconds']} s")
    for note in r["notes"]:
        print("note:", note)
    names = list(r["functions"])
    print("median final regret (mean rank)")
    print(f"{'tool':<22}" + "".join(f"{n:>24}" for n in names) + f"{'overall rank':>14}")
    for tool in tools:
        cells = "".join(f"{fmt(r['functions'][n]['median_final_regret'][tool]) + ' (' + format(r['functions'][n]['mean_rank'][tool], '.2f') + ')':>24}"
                        for n in names)
        print(f"{tool:<22}{cells}{r['overall_mean_rank'][tool]:>14.2f}")
    for n in names:
        fr = r["functions"][n]["tpe_time_to_random_final_over_horizon"]
        if fr:
            print(f"{n}: time to random's median final regret / T: " +
                  ", ".join(f"{t} {fmt(v, '.2f')}" for t, v in fr.items()))


def main(argv=None, **defaults):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        return worker(argv[1])
    a = parse_args(argv, defaults)
    rc, r = run_main("tuner_bench", bench, a)
    if rc:
        return rc
    os.makedirs(a.out, exist_ok=True)
    json_path, html_path = os.path.join(a.out, "tuner_bench.json"), os.path.join(a.out, "tuner_bench.html")
    tmp = json_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(r, f)
    os.replace(tmp, json_path)
    if not a.plotly:
        r["notes"].append("no plotly.js found: the page has the tables only (pass --plotly FILE)")
    write_page(html_path, r, a.plotly)
    print_table(r)
    log(f"wrote {json_path} and {html_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
