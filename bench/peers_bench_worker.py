"""peers_bench_worker: the peers' side of peers_bench, run in the peers' venv (torch, ray[tune],
optuna) as peers_bench.py --worker NAME SPEC.

It trains the same model on the same split as packtune (bench/peer_loop.py) under Ray Tune's
HyperBandScheduler or Optuna's HyperbandPruner and prints one JSON line: the reports, the best
trial and its test accuracy. The standard library at import, torch and the peers inside the
functions, so that the driver can import this module under any python3.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
# The peers' processes enter through the script's --worker, Optuna's own processes too.
SCRIPT = os.path.join(HERE, "peers_bench.py")


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
    # Ray pickles ray_trainable by reference to this module; its workers import it from the driver
    # script's folder (bench/), which Ray puts on their sys.path.
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
    procs = [subprocess.Popen([sys.executable, SCRIPT, "--worker", "optuna_process", spec_path, str(i)])
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
