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
See docs/benchmarks.md.
"""
import argparse
import concurrent.futures
import datetime
import heapq
import json
import math
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FUNCTIONS_PY = os.path.join(HERE, "tuner_functions.py")
# DEHB pins numpy < 2, which Ray Tune's pyarrow refuses: it gets a venv of its own, apart from the
# peers' one (bench_lib.DEFAULT_PEERS_PYTHON).
DEFAULT_DEHB_PYTHON = os.path.expanduser("~/.cache/packtune/dehb-venv/bin/python")
PACKTUNE_TUNERS = ("random", "asha", "hyperband", "async_hyperband")
PEERS = ("optuna_tpe", "optuna_random", "dehb")
sys.path.insert(0, HERE)
from bench_lib import (PAGE_END, BenchError, add_peers_python_option, hyperband_schedule,  # noqa: E402
                       installed_plotly, load_average, run_main, sweep_trials,
                       write_self_contained_page)  # (stdlib only)
PEER_MODULES = {"optuna_tpe": "optuna", "optuna_random": "optuna", "dehb": "dehb"}
ETA = 3
GRID = 200  # points of the median curves


def log(message):
    print(f"tuner_bench: {message}", file=sys.stderr, flush=True)


def packtune_tools():
    return [t + suffix for t in PACKTUNE_TUNERS for suffix in ("", "+tpe")]


# ------------------------------------------------------------------------------------------
# The driver side: stdlib only (build/bench/tuner_bench runs under any python3)
# ------------------------------------------------------------------------------------------

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


def describe_functions(a):
    """The functions' spaces, budgets and optima, from the module itself (it needs numpy)."""
    out = subprocess.run([a.python, FUNCTIONS_PY, "list"], capture_output=True, text=True)
    if out.returncode != 0:
        raise BenchError(f"{a.python} {FUNCTIONS_PY} list failed (it needs numpy; see --python):\n{out.stderr}")
    known = json.loads(out.stdout)
    for f in a.functions:
        if f not in known:
            raise BenchError(f"--functions: unknown function {f!r}; expected some of {','.join(known)}")
    return {f: known[f] for f in a.functions}


def hyperband_sweep(packtune, fn):
    """Trials in one Hyperband sweep over fn's budgets, as packtune's own brackets count them."""
    return sweep_trials(hyperband_schedule(packtune, fn["min_budget"], fn["max_budget"], ETA))


def trial_limit(tuner, fn, workers, horizon, sweep=None):
    """A trial limit the tuner cannot reach within the horizon, so that time, not the limit,
    ends the run: every trial costs at least the min budget (the max budget under random).
    Under hyperband it is whole sweeps of `sweep` trials."""
    unit = fn["max_budget"] if tuner == "random" else fn["min_budget"]
    limit = int(math.ceil(workers * horizon / unit)) + workers
    if tuner == "hyperband":
        limit = sweep * int(math.ceil(limit / sweep))
    return limit


def run_packtune(a, work, function, fn, tool, seed, horizon, sweep=None):
    """One packtune simulate run, read as it goes and stopped at the first event past the horizon:
    events come in simulated-time order, so nothing later can count. A run that reaches its
    summary first is left to exit by itself (it waits for the function's process to end)."""
    tuner, tpe = tool.split("+")[0], tool.endswith("+tpe")
    config = os.path.join(work, f"{function}.json")
    serve = f"{shlex.quote(a.python)} {shlex.quote(FUNCTIONS_PY)} serve {function} --seed {seed}"
    command = [a.packtune, "simulate", config, "--objective", "exec:" + serve, "--tuner", tuner,
               "--workers", str(a.workers), "--seed", str(seed),
               "--trials", str(trial_limit(tuner, fn, a.workers, horizon, sweep)), "--json"]
    if tuner != "random":
        command += ["--eta", str(ETA)]
    if tpe:
        command += ["--tuner-setting", "sampler=tpe"]
    results, starts, past, read_all = [], 0, False, False
    err_path = os.path.join(work, f"{function}-{tool}-{seed}.err")
    with open(err_path, "w") as err:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            for line in proc.stdout:
                e = json.loads(line)
                if e.get("event") == "summary":
                    break
                if e["t"] > horizon:
                    past = True
                    break
                if e["event"] == "start":
                    starts += 1
                elif e["event"] == "result" and e.get("metric") is not None:
                    results.append((e["t"], e["budget"], e["metric"]))
            read_all = not past
        finally:
            # Its exit status counts unless it was stopped here: past the horizon, or on an
            # exception (an interrupt, a line that is not JSON).
            if not read_all and proc.poll() is None:
                proc.terminate()
            proc.stdout.close()
            rc = proc.wait()
    if not past and rc != 0:
        with open(err_path) as f:
            raise BenchError(f"{' '.join(shlex.quote(c) for c in command)} exited {rc}:\n{f.read()}")
    jobs_done = len(results)
    return trace_of(results, fn), {"jobs_started": starts, "jobs_done": jobs_done}


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


def peer_python(a, tool):
    return a.dehb_python if tool == "dehb" else a.peers_python


def peer_available(a, tool):
    """(True, version) if the peer imports in the peers' python, else (False, why)."""
    module = PEER_MODULES[tool]
    python = shutil.which(peer_python(a, tool))
    if not python:  # no venv (scripts/setup-peers.sh not run): skipped, not a crash
        return False, f"no python at {peer_python(a, tool)}"
    out = subprocess.run([python, "-c", f"import {module}, numpy, importlib.metadata as m; "
                          f"print(m.version({module!r}))"], capture_output=True, text=True)
    if out.returncode == 0:
        return True, out.stdout.strip()
    return False, (out.stderr.strip().splitlines() or ["not found"])[-1]


def run_peer(a, work, function, tool, seeds, horizon):
    """One peers' process for all seeds of (function, tool): the import of Optuna takes seconds."""
    spec = {"function": function, "tool": tool, "seeds": seeds, "workers": a.workers, "horizon": horizon,
            "functions_py": FUNCTIONS_PY}
    spec_path = os.path.join(work, f"{function}-{tool}.spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    out = subprocess.run([peer_python(a, tool), os.path.abspath(__file__), "--worker", spec_path],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise BenchError(f"{tool} on {function} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


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


def reuse_runs(a, runs):
    """Fills `runs` with the peers' runs an earlier output holds for the same conditions, so
    that packtune alone runs again after a rebuild; returns how many, and the versions of the
    peers that output names."""
    with open(a.reuse) as f:
        old = json.load(f)
    for key, mine in (("workers", a.workers), ("time_budget", a.time_budget), ("eta", ETA)):
        if old.get(key) != mine:
            raise BenchError(f"--reuse {a.reuse}: its {key} is {old.get(key)}, this run's {mine}")
    a.reuse_date = old.get("date")
    count = 0
    for name, by_tool in runs.items():
        for tool, by_seed in by_tool.items():
            if tool not in PEERS:
                continue
            for seed_text, r in old.get("functions", {}).get(name, {}).get("runs", {}).get(tool, {}).items():
                by_seed[int(seed_text)] = r
                count += 1
    return count, old.get("versions", {})


def reused_versions(runs, tools, seeds, versions, old_versions):
    """Sets in `versions` the version of each peer whose runs were all taken from an earlier
    output to the one that output names; returns notes for peers whose runs come from both."""
    notes = []
    for module in sorted({PEER_MODULES[t] for t in tools if t in PEERS}):
        mine = [t for t in tools if PEER_MODULES.get(t) == module]
        held = [s in by_tool[t] for by_tool in runs.values() for t in mine for s in seeds]
        old = old_versions.get(module)
        if all(held) and old:
            versions[module] = old
        elif any(held) and old and old != versions.get(module):
            notes.append(f"{module}: the runs taken from --reuse used {old}, the new ones {versions.get(module)}")
    return notes


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


def bench(a):
    functions = describe_functions(a)
    seeds = list(range(a.first_seed, a.first_seed + a.seeds))
    notes, tools, versions = [], [], {}
    for tool in a.tools:
        if tool in PEERS:
            ok, why = peer_available(a, tool)
            if not ok:
                notes.append(f"{tool} skipped: {PEER_MODULES[tool]} does not import in {peer_python(a, tool)} ({why})")
                log(notes[-1])
                continue
            versions[PEER_MODULES[tool]] = why
        tools.append(tool)
    if not tools:
        raise BenchError("no tool to run")
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = load_average()
    wall = time.monotonic()
    runs = {f: {t: {} for t in tools} for f in functions}
    if a.reuse:
        reused, old_versions = reuse_runs(a, runs)
        notes.append(f"{reused} runs taken from {a.reuse} ({a.reuse_date})")
        log(notes[-1])
        for note in reused_versions(runs, tools, seeds, versions, old_versions):
            notes.append(note)
            log(note)
    with tempfile.TemporaryDirectory(prefix="tuner_bench.") as work:
        for name, fn in functions.items():
            with open(os.path.join(work, f"{name}.json"), "w") as f:
                json.dump({"space": fn["space"], "mode": "min",
                           "budget": {"min": fn["min_budget"], "max": fn["max_budget"]}}, f)
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
            futures = {}
            # The peers first: one process each for all seeds, the longest jobs.
            for name, fn in functions.items():
                horizon = a.time_budget * fn["max_budget"]
                sweep = hyperband_sweep(a.packtune, fn) if "hyperband" in (t.split("+")[0] for t in tools) else None
                for tool in tools:
                    todo = [s for s in seeds if s not in runs[name][tool]]
                    if tool in PEERS and todo:
                        futures[pool.submit(run_peer, a, work, name, tool, todo, horizon)] = (name, tool, None)
                    elif tool not in PEERS:
                        for s in todo:
                            futures[pool.submit(run_packtune, a, work, name, fn, tool, s, horizon, sweep)] = \
                                (name, tool, s)
            try:
                done = 0
                for future in concurrent.futures.as_completed(futures):
                    name, tool, s = futures[future]
                    fn = functions[name]
                    horizon = a.time_budget * fn["max_budget"]
                    if s is None:
                        for seed_text, r in future.result().items():
                            trace = r.pop("trace")
                            runs[name][tool][int(seed_text)] = {"trace": trace,
                                                                "final_regret": regret_at(trace, horizon), **r}
                    else:
                        trace, counts = future.result()
                        runs[name][tool][s] = {"trace": trace, "final_regret": regret_at(trace, horizon), **counts}
                    done += 1
                    if done % 20 == 0 or done == len(futures):
                        log(f"{done} of {len(futures)} runs done ({time.monotonic() - wall:.0f} s)")
            except BaseException:
                # A failed run or an interrupt ends the bench: the runs still queued are dropped
                # (the pool's own exit would start every one of them), the running ones awaited.
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    summaries = {name: summarize(fn, runs[name], tools, seeds, a.time_budget * fn["max_budget"])
                 for name, fn in functions.items()}
    overall = {tool: sum(summaries[f]["mean_rank"][tool] for f in functions) / len(functions) for tool in tools}
    return {
        "bench": "tuner_bench",
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "wall_seconds": round(time.monotonic() - wall, 1),
        "load_before": load_before, "load_after": load_average(),
        "host": platform.node(), "cores": os.cpu_count(),
        "workers": a.workers, "time_budget": a.time_budget, "eta": ETA, "seeds": seeds, "tools": tools,
        "notes": notes, "versions": versions,
        "regret": "best value reported at the max budget so far minus f*; undefined (null) before the first",
        "functions": {name: {**summaries[name],
                             "runs": {tool: {str(s): runs[name][tool][s] for s in seeds} for tool in tools}}
                      for name in functions},
        "overall_mean_rank": overall,
    }


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


PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>tuner_bench</title>
<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;margin:0.5em 0 1.5em}
td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}th:first-child,td:first-child{text-align:left}
.chart{width:100%;max-width:1000px;height:460px}</style>
<script>var pageErrors = [];
window.addEventListener('error', function (e) { pageErrors.push(String(e.message)); });</script>
<script>/*plotly*/</script></head>
<body><h1>tuner_bench</h1><p id="what"></p><ul id="notes"></ul>
<h2>Median final regret and mean rank</h2><table id="finals"></table>
<div id="charts"></div>
<script>
var bench = /*data*/;
var palette = {random: '#7f7f7f', asha: '#1f77b4', hyperband: '#ff7f0e', async_hyperband: '#2ca02c',
               optuna_tpe: '#d62728', optuna_random: '#e377c2', dehb: '#9467bd'};
var drawn = {};
function cell(x) { return x === null || x === undefined ? 'never' : Number(x).toPrecision(3); }
document.getElementById('what').textContent = bench.what;
bench.notes.forEach(function (n) { var li = document.createElement('li'); li.textContent = n;
  document.getElementById('notes').appendChild(li); });
var names = Object.keys(bench.functions);
var rows = '<tr><th>tool</th>' + names.map(function (n) { return '<th>' + n + '</th>'; }).join('') +
           '<th>mean rank overall</th></tr>';
bench.tools.forEach(function (tool) {
  rows += '<tr><td>' + tool + '</td>' + names.map(function (n) {
    var f = bench.functions[n];
    return '<td>' + cell(f.median_final_regret[tool]) + ' (' + f.mean_rank[tool].toFixed(2) + ')</td>';
  }).join('') + '<td>' + bench.overall_mean_rank[tool].toFixed(2) + '</td></tr>';
});
document.getElementById('finals').innerHTML = rows;
names.forEach(function (n, i) {
  var f = bench.functions[n];
  var h = document.createElement('h2');
  h.textContent = n + ': median regret over ' + bench.seeds.length + ' seeds (f* = ' + f.optimum +
                  ', budgets ' + f.min_budget + ' ... ' + f.max_budget + ')';
  document.getElementById('charts').appendChild(h);
  var chart = document.createElement('div');
  chart.className = 'chart';
  chart.id = 'chart-' + i;
  document.getElementById('charts').appendChild(chart);
  var traces = bench.tools.map(function (tool) {
    var base = tool.split('+')[0];
    return {name: tool, x: f.grid, y: f.median_regret[tool], mode: 'lines',
            line: {shape: 'hv', color: palette[base] || '#000', dash: tool.indexOf('+tpe') >= 0 ? 'dash' : 'solid',
                   width: base.indexOf('optuna') === 0 || base === 'dehb' ? 3 : 2}};
  });
  if (typeof Plotly === 'undefined') { chart.textContent = 'plotly.js was not available when the page was written'; return; }
  Plotly.newPlot(chart.id, traces, {xaxis: {title: 'simulated time'}, yaxis: {title: 'median regret', type: 'log'},
                 margin: {t: 20}}, {responsive: true, displaylogo: false});
  drawn[chart.id] = document.getElementById(chart.id).querySelectorAll('.scatterlayer .trace').length;
});
""" + PAGE_END


def write_page(path, r, plotly_path):
    """One self-contained page: plotly.js and the figures inlined, nothing fetched when it opens.
    The per-seed traces stay in the JSON; the page carries the medians and ranks."""
    what = (f"{r['date']}: {len(r['seeds'])} seeds, {r['workers']} simulated workers, time budget "
            f"{r['time_budget']:g} x each function's max budget, eta {r['eta']}; regret = {r['regret']}; "
            f"dashed: packtune with sampler tpe; {r['cores']} cores, {r['host']}")
    slim = {"what": what, "notes": r["notes"], "tools": r["tools"], "seeds": r["seeds"],
            "overall_mean_rank": r["overall_mean_rank"],
            "functions": {n: {k: v for k, v in f.items() if k != "runs"} for n, f in r["functions"].items()}}
    write_self_contained_page(path, PAGE, slim, plotly_path)


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


# ------------------------------------------------------------------------------------------
# The peers' side: runs in the peers' venv (optuna, dehb, numpy)
# ------------------------------------------------------------------------------------------

class EventQueue:
    """W simulated workers: jobs end at start + cost; jobs that end together complete in the
    order they started, as in packtune simulate."""

    def __init__(self):
        self.heap, self.order = [], 0

    def push(self, end, job):
        heapq.heappush(self.heap, (end, self.order, job))
        self.order += 1

    def pop(self):
        end, _, job = heapq.heappop(self.heap)
        return end, job

    def __len__(self):
        return len(self.heap)


def simulate(workers, horizon, start, finish):
    """A peer's run in packtune simulate's time model, up to the horizon. start(now) begins a
    trial: (cost, job), the job ending at now + cost. finish(now, job) ends one: (budget, value,
    then), where `then` is the (cost, job) that the same trial goes on with, or None, and the
    worker starts a new trial. Returns the results [(t, budget, value)] and the jobs done;
    nothing that ends after the horizon is finished."""
    queue, results, jobs = EventQueue(), [], 0
    for _ in range(workers):
        cost, job = start(0.0)
        queue.push(cost, job)
    while queue:
        now, job = queue.pop()
        if now > horizon:
            break
        jobs += 1
        budget, value, then = finish(now, job)
        results.append((now, budget, value))
        cost, job = then if then is not None else start(now)
        queue.push(now + cost, job)
    return results, jobs


def rung_budgets(fn):
    """The geometric rungs min * eta^k up to max, anchored at the max budget as packtune's."""
    budgets, b = [], fn.max_budget
    while b >= fn.min_budget * (1 - 1e-9):
        budgets.append(b)
        b /= ETA
    return sorted(budgets)


def run_optuna(fn, tool, seed, workers, horizon):
    """Optuna's ask/tell in simulated time: each trial trains rung by rung (paying each rung's
    budget increment), reports its value at the rung's step and asks its HyperbandPruner whether
    to go on. Steps are budgets in min-budget units, so the pruner's rungs are packtune's."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    budgets = rung_budgets(fn)
    steps = [int(round(b / budgets[0])) for b in budgets]
    sampler = (optuna.samplers.TPESampler(seed=seed) if tool == "optuna_tpe"
               else optuna.samplers.RandomSampler(seed=seed))
    pruner = optuna.pruners.HyperbandPruner(min_resource=steps[0], max_resource=steps[-1], reduction_factor=ETA)
    # The pruner picks a trial's bracket from a hash of the study's name and the trial's number:
    # a name of our own, since Optuna's default is a fresh UUID and the runs would not repeat.
    study = optuna.create_study(study_name=f"tuner_bench-{seed}", direction="minimize", sampler=sampler,
                                pruner=pruner)

    def start(now):
        trial = study.ask()
        params = {}
        for k, d in fn.space.items():
            if d["type"] == "choice":
                params[k] = trial.suggest_categorical(k, d["values"])
            elif d["type"] in ("uniform", "loguniform"):
                params[k] = trial.suggest_float(k, d["low"], d["high"], log=d["type"] == "loguniform")
            else:
                params[k] = trial.suggest_int(k, d["low"], d["high"])
        return budgets[0], (trial, params, 0)

    def finish(now, job):
        trial, params, rung = job
        value = fn.evaluate(params, budgets[rung], seed, trial.number)
        if rung == len(budgets) - 1:
            study.tell(trial, value)
            return budgets[rung], value, None
        trial.report(value, steps[rung])
        if not trial.should_prune():
            return budgets[rung], value, (budgets[rung + 1] - budgets[rung], (trial, params, rung + 1))
        study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        return budgets[rung], value, None

    results, jobs = simulate(workers, horizon, start, finish)
    return results, {"jobs_done": jobs, "trials": len(study.trials)}


def run_dehb(fn, seed, workers, horizon, work):
    """DEHB's ask/tell in simulated time: DEHB trains every config it asks for from scratch at
    the fidelity it asks, so a job costs the whole fidelity."""
    import ConfigSpace as CS
    from dehb import DEHB
    cs = CS.ConfigurationSpace(seed=seed)
    for k, d in fn.space.items():
        if d["type"] == "choice":
            cs.add(CS.CategoricalHyperparameter(k, d["values"]))
        else:
            cs.add(CS.UniformFloatHyperparameter(k, d["low"], d["high"], log=d["type"] == "loguniform"))
    kwargs = {"cs": cs, "dimensions": len(fn.space), "eta": ETA, "n_workers": 1, "output_path": work, "seed": seed,
              "save_freq": "end"}
    dehb = DEHB(min_fidelity=fn.min_budget, max_fidelity=fn.max_budget, **kwargs)
    number = 0  # of the next config finished: its trial number, as packtune numbers its trials

    def start(now):
        asked = dehb.ask()
        fidelity = float(asked["fidelity"])
        return fidelity, (asked, dict(asked["config"]), fidelity)

    def finish(now, job):
        nonlocal number
        asked, config, fidelity = job
        value = fn.evaluate(config, fidelity, seed, number)
        number += 1
        dehb.tell(asked, {"fitness": value, "cost": fidelity})
        return fidelity, value, None

    results, jobs = simulate(workers, horizon, start, finish)
    return results, {"jobs_done": jobs, "trials": jobs}


def worker(spec_path):
    with open(spec_path) as f:
        spec = json.load(f)
    sys.path.insert(0, os.path.dirname(spec["functions_py"]))
    import tuner_functions
    fn = tuner_functions.FUNCTIONS[spec["function"]]
    described = tuner_functions.describe(fn)
    out = {}
    for seed in spec["seeds"]:
        if spec["tool"] == "dehb":
            with tempfile.TemporaryDirectory(prefix="tuner_bench_dehb.") as work:
                results, counts = run_dehb(fn, seed, spec["workers"], spec["horizon"], work)
        else:
            results, counts = run_optuna(fn, spec["tool"], seed, spec["workers"], spec["horizon"])
        out[str(seed)] = {"trace": trace_of(results, described), **counts}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
