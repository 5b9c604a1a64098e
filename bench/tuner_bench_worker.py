"""tuner_bench_worker: the peers' side of tuner_bench, run in a peer's venv (optuna or dehb, and
numpy) as tuner_bench.py --worker SPEC.

Optuna and DEHB ask and tell in packtune simulate's time model, simulated here: W workers, a job
costing the budget it adds. It prints one JSON line: per seed the regret trace and the counts.
"""
import heapq
import json
import os
import sys
import tempfile

from tuner_bench_rules import ETA, trace_of


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
