"""tuner_bench_runs: how tuner_bench runs every tool on every function and seed.

packtune's tuners run as `packtune simulate --objective exec:` (one process per run, read up to
the horizon); each peer runs as tuner_bench.py --worker in its venv (tuner_bench_worker.py),
one process for all seeds. bench() runs them all at once and summarises them with
tuner_bench_rules.py. The standard library only, as the rest of the driver.
"""
import concurrent.futures
import datetime
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

from bench_lib import BenchError, hyperband_schedule, load_average, sweep_trials
from tuner_bench_rules import ETA, regret_at, summarize, trace_of

HERE = os.path.dirname(os.path.abspath(__file__))
FUNCTIONS_PY = os.path.join(HERE, "tuner_functions.py")
# The peers' side enters through the script's --worker.
SCRIPT = os.path.join(HERE, "tuner_bench.py")
PEERS = ("optuna_tpe", "optuna_random", "dehb")
PEER_MODULES = {"optuna_tpe": "optuna", "optuna_random": "optuna", "dehb": "dehb"}


def log(message):
    print(f"tuner_bench: {message}", file=sys.stderr, flush=True)


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
    out = subprocess.run([peer_python(a, tool), SCRIPT, "--worker", spec_path],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise BenchError(f"{tool} on {function} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


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
