#!/usr/bin/env python3
"""The peer of a packtune run: the same trials trained one after another in a plain PyTorch
loop, written as a PyTorch user would write it (one process, the whole data set on the device
as one normalised tensor, eager mode, the losses summed on the device and read at reports).

bench/peer_bench runs it with a spec file (JSON) it writes from the packed run's config.json
and results.jsonl:

  {"device": "cpu" | "cuda" | "cuda:N", "threads": 0 (CPU: all cores),
   "data": {"dir": ..., "train_size": 0 (all), "validation_size": 10000},
   "budget": {"max": 2, "report_every": 0.5},          # epochs
   "trials": [{"trial": 0, "seed": 1000, "config": {"family": "mlp", "width": 256, ...}}, ...]}

and prints one JSON object: setup and training seconds, each trial's reports, the best
val_accuracy. It matches packtune's training (datasets/, actors/classifier.cpp,
actors/fused_group.cpp): the validation split off the end of the training file, pixels / 255
normalised by the training split's mean and std, an epoch = floor(train / batch) steps, a
trial's steps = round(budget x epoch steps), SGD (momentum, nesterov, weight decay), Adam and
AdamW with torch's own optimizers, the whole validation split evaluated at every report.
Runs on PyTorch 1.13 (Debian's python3-torch) and 2.x.
"""
import argparse
import gzip
import json
import math
import os
import sys
import time

import torch
from torch import nn


def read_idx(path, count=0):
    """An IDX file (plain or gzip) as a uint8 tensor, at most `count` items (0: all)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        header = f.read(4)
        if len(header) != 4 or header[0] != 0 or header[1] != 0 or header[2] != 0x08:
            raise SystemExit(f"peer_loop: {path}: not an unsigned-byte IDX file")
        ndims = header[3]
        dims = [int.from_bytes(f.read(4), "big") for _ in range(ndims)]
        if count:
            dims[0] = min(dims[0], count)
        size = math.prod(dims)
        data = bytearray(f.read(size))
        if len(data) != size:
            raise SystemExit(f"peer_loop: {path}: truncated")
        return torch.frombuffer(data, dtype=torch.uint8).reshape(dims)


def find_file(directory, stem):
    for name in (stem, stem + ".gz"):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path
    raise SystemExit(f"peer_loop: no {stem}[.gz] in {directory}; pass --data-dir or set PACKTUNE_DATA_DIR")


def load_split(data, device):
    """Train and validation tensors on `device`, as packtune's load_image_split and BatchStream."""
    train_size = int(data.get("train_size", 0))
    validation_size = int(data.get("validation_size", 10000))
    wanted = train_size + validation_size if train_size > 0 else 0
    images = read_idx(find_file(data["dir"], "train-images-idx3-ubyte"), wanted)
    labels = read_idx(find_file(data["dir"], "train-labels-idx1-ubyte"), wanted)
    n = min(len(images), len(labels))
    train_end = n - validation_size
    if train_end <= 0:
        raise SystemExit(f"peer_loop: validation_size {validation_size} leaves no training images of {n}")
    pixels = images[:n].unsqueeze(1)  # N, 1, 28, 28
    targets = labels[:n].long()
    train = pixels[:train_end].float().div_(255.0)
    mean, std = train.mean().item(), train.std().item()

    def normalised(x):
        return x.float().div_(255.0).sub_(mean).div_(std).to(device)

    return (normalised(pixels[:train_end]), targets[:train_end].to(device),
            normalised(pixels[train_end:n]), targets[train_end:n].to(device))


ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU, "sigmoid": nn.Sigmoid}


def build_model(c, channels=1, height=28, width=28, classes=10):
    """packtune's classifier (actors/classifier.cpp) in torch.nn."""
    family, depth = c.get("family", "mlp"), int(c.get("depth", 2))
    act, dropout, hidden = ACTIVATIONS[c.get("activation", "relu")], float(c.get("dropout", 0.0)), int(c.get("width", 256))
    layers = []
    if family == "mlp":
        layers.append(nn.Flatten())
        features = channels * height * width
        for _ in range(depth):
            layers += [nn.Linear(features, hidden), act()]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            features = hidden
    elif family == "cnn":
        kernel, base, bn = int(c.get("kernel", 3)), int(c.get("channels", 16)), bool(c.get("batch_norm", True))
        ch, h, w = channels, height, width
        for i in range(depth):
            out = base << i
            layers.append(nn.Conv2d(ch, out, kernel, padding=kernel // 2, bias=not bn))
            if bn:
                layers.append(nn.BatchNorm2d(out))
            layers += [act(), nn.MaxPool2d(2)]
            ch, h, w = out, (h + 2 * (kernel // 2) - kernel + 1) // 2, (w + 2 * (kernel // 2) - kernel + 1) // 2
        layers.append(nn.Flatten())
        features = ch * h * w
        if hidden > 0:
            layers += [nn.Linear(features, hidden), act()]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            features = hidden
    else:
        raise SystemExit(f"peer_loop: unknown model family {family!r}")
    layers.append(nn.Linear(features, classes))
    return nn.Sequential(*layers)


def build_optimizer(c, params):
    name, lr, wd = c.get("optimizer", "sgd"), float(c.get("lr", 0.01)), float(c.get("weight_decay", 0.0))
    betas = (float(c.get("beta1", 0.9)), float(c.get("beta2", 0.999)))
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=float(c.get("momentum", 0.0)),
                               nesterov=bool(c.get("nesterov", False)), weight_decay=wd)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, betas=betas, weight_decay=wd)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, betas=betas, weight_decay=wd)
    raise SystemExit(f"peer_loop: unknown optimizer {name!r}")


def evaluate(model, x, y, chunk=1024):
    model.eval()
    loss = torch.zeros((), dtype=torch.float64, device=x.device)
    correct = torch.zeros((), dtype=torch.int64, device=x.device)
    with torch.no_grad():
        for begin in range(0, len(x), chunk):
            logits = model(x[begin:begin + chunk])
            target = y[begin:begin + chunk]
            loss += nn.functional.cross_entropy(logits, target, reduction="sum").double()
            correct += (logits.argmax(1) == target).sum()
    model.train()
    return loss.item() / len(x), correct.item() / len(x)


def report_budgets(max_budget, every):
    """The budgets packtune reports at: every `every` epochs, and the maximum."""
    if every <= 0 or every >= max_budget:
        return [max_budget]
    out = [every * i for i in range(1, int(math.floor(max_budget / every + 1e-9)) + 1)]
    if out[-1] < max_budget - 1e-9:
        out.append(max_budget)
    return out


def train_trial(trial, data, budget, device):
    train_x, train_y, val_x, val_y = data
    c = trial["config"]
    torch.manual_seed(int(trial.get("seed", trial["trial"])))
    model = build_model(c).to(device)
    optimizer = build_optimizer(c, model.parameters())
    batch = int(c.get("batch_size", 128))
    n = len(train_x)
    per_epoch = max(1, n // batch)
    size = min(batch, n)
    reports, step, perm = [], 0, None
    loss_sum = torch.zeros((), device=device)
    loss_count = 0
    for b in report_budgets(float(budget["max"]), float(budget.get("report_every", 0))):
        until = max(1, round(b * per_epoch))
        while step < until:
            k = step % per_epoch
            if k == 0 or perm is None:
                perm = torch.randperm(n, device=device)
            index = perm[k * size:(k + 1) * size]
            loss = nn.functional.cross_entropy(model(train_x[index]), train_y[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss_sum += loss.detach()
            loss_count += 1
            step += 1
        val_loss, val_accuracy = evaluate(model, val_x, val_y)
        train_loss = loss_sum.item() / max(1, loss_count)
        loss_sum.zero_()
        loss_count = 0
        reports.append({"budget": b, "steps": step, "val_accuracy": val_accuracy, "val_loss": val_loss,
                        "train_loss": train_loss})
    return reports


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", nargs="?", help="the spec file bench/peer_bench writes")
    parser.add_argument("--probe-device", metavar="D",
                        help="print the device D (cpu|cuda|cuda:N|auto) resolves to here, and exit")
    args = parser.parse_args()
    if args.probe_device:
        d = args.probe_device
        print("cuda" if d == "auto" and torch.cuda.is_available() else "cpu" if d == "auto" else d)
        return
    if not args.spec:
        parser.error("expected a spec file")
    start = time.perf_counter()
    with open(args.spec) as f:
        spec = json.load(f)
    device = torch.device(spec["device"])
    threads = int(spec.get("threads", 0)) or os.cpu_count()
    if device.type == "cpu":
        torch.set_num_threads(threads)
    data = load_split(spec["data"], device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    setup = time.perf_counter() - start
    trials = []
    for trial in spec["trials"]:
        trials.append({"trial": trial["trial"], "reports": train_trial(trial, data, spec["budget"], device)})
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    train = time.perf_counter() - start - setup
    accuracies = [r["val_accuracy"] for t in trials for r in t["reports"]]
    json.dump({"device": str(device), "torch": torch.__version__,
               "threads": torch.get_num_threads() if device.type == "cpu" else None,
               "train_images": len(data[0]), "validation_images": len(data[2]),
               "setup_seconds": setup, "train_seconds": train,
               "best_val_accuracy": max(accuracies) if accuracies else None, "trials": trials},
              sys.stdout)
    print()


if __name__ == "__main__":
    main()
