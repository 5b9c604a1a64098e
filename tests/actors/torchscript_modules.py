#!/usr/bin/env python3
"""TorchScript files for packtune's tests of the torchscript family, written at test time, and the
oracle that trains one with PyTorch itself (Debian's python3-torch).

  torchscript_modules.py modules DIR SIDE
      writes into DIR the modules the tests load, for 1 x SIDE x SIDE images and 10 classes: good
      ones (small.pt, wide.pt, dropout.pt, rated.pt with attributes to set) and one of each kind
      packtune must refuse.
  torchscript_modules.py train MODULE BATCHES OUT [--unfused]
      the oracle: trains MODULE with torch.optim.SGD on the batches in BATCHES (JSON written by
      tests/actors/torchscript_model_test.cpp: the hyper-parameters, and each step's inputs and
      labels) and writes its parameters and buffers after the last step to OUT (JSON: "state",
      and "libtorch", the path of the LibTorch library that computed them). With
      --unfused, SGD's step is written out so that every product is rounded before it is added,
      as packtune's CPU step does (docs/reproducibility.md); torch.optim.SGD's whole-tensor
      kernels fuse some of them into one multiply-add, which rounds once.
"""
import json
import os
import sys
import zipfile

import torch
import torch.nn.functional as F


class Small(torch.nn.Module):
    """A convolution with batch norm and a linear classifier: parameters and buffers."""

    def __init__(self, side: int, channels: int = 4, dropout: float = 0.0):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, channels, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(channels)
        self.drop = torch.nn.Dropout(dropout)
        self.head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(channels * side * side // 4, 10))

    def forward(self, x):
        return self.head(self.drop(F.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)))


class Rated(torch.nn.Module):
    """Small with attributes a config may set: the rate of a dropout its forward reads, a flag
    and a name; and a constant, which TorchScript inlines."""

    __constants__ = ["k"]

    def __init__(self, side: int):
        super().__init__()
        self.body = Small(side)
        self.rate = 0.0
        self.flag = False
        self.label = "rated"
        self.k = 1.0

    def forward(self, x):
        return F.dropout(self.body(x), self.rate, self.training) * self.k


class WrongShape(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(1, 5)

    def forward(self, x):
        return self.fc(x.flatten(1)[:, :1])


class Throws(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(7, 10)

    def forward(self, x):
        return self.fc(x.reshape(-1, 7, 3))


class Float64Output(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(1, 10)

    def forward(self, x):
        return self.fc(x.flatten(1)[:, :1]).double()


class TupleOutput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(1, 10)

    def forward(self, x):
        y = self.fc(x.flatten(1)[:, :1])
        return y, y


class Constant(torch.nn.Module):
    """Its output ignores its parameters: nothing would train."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(1, 10)

    def forward(self, x):
        return torch.zeros(x.size(0), 10)


class NoForward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(1, 10)

    @torch.jit.export
    def predict(self, x):
        return self.fc(x)


def with_version(source: str, target: str, version: bytes) -> None:
    """`source` with its TorchScript file format version set to `version`: what a PyTorch newer
    than the reader writes, without one at hand."""
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            zout.writestr(item, version if item.filename.endswith("/version") else data)


def modules(folder: str, side: int) -> None:
    os.makedirs(folder, exist_ok=True)
    torch.manual_seed(7)
    torch.jit.script(Small(side)).save(f"{folder}/small.pt")
    torch.jit.script(Small(side, channels=8)).save(f"{folder}/wide.pt")
    torch.jit.script(Small(side, dropout=0.3)).save(f"{folder}/dropout.pt")
    torch.jit.script(Rated(side)).save(f"{folder}/rated.pt")
    torch.jit.script(WrongShape()).save(f"{folder}/wrong_shape.pt")
    torch.jit.script(Throws()).save(f"{folder}/throws.pt")
    torch.jit.script(Float64Output()).save(f"{folder}/float64_output.pt")
    torch.jit.script(TupleOutput()).save(f"{folder}/tuple_output.pt")
    torch.jit.script(Constant()).save(f"{folder}/constant.pt")
    torch.jit.script(NoForward()).save(f"{folder}/no_forward.pt")
    torch.jit.script(Small(side).double()).save(f"{folder}/float64_parameters.pt")
    torch.save(Small(side), f"{folder}/pickled.pt")
    with open(f"{folder}/not_a_zip.pt", "w") as out:
        out.write("not TorchScript\n")
    with_version(f"{folder}/small.pt", f"{folder}/newer.pt", b"99\n")


def train(module_path: str, batches_path: str, out_path: str, unfused: bool) -> None:
    with open(batches_path) as f:
        run = json.load(f)
    module = torch.jit.load(module_path)
    module.train()
    lr, momentum, weight_decay = run["lr"], run["momentum"], run["weight_decay"]
    params = list(module.parameters())
    optimizer = torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    buffers = [None] * len(params)
    shape = run["input_shape"]
    for step in run["steps"]:
        x = torch.tensor(step["x"], dtype=torch.float32).reshape([-1] + shape)
        y = torch.tensor(step["y"], dtype=torch.int64)
        optimizer.zero_grad()
        F.cross_entropy(module(x), y).backward()
        if not unfused:
            optimizer.step()
            continue
        with torch.no_grad():
            for i, p in enumerate(params):
                d = p.grad + p * weight_decay
                buffers[i] = d.clone() if buffers[i] is None else buffers[i] * momentum + d
                p.sub_(buffers[i] * lr)
    state = {name: t.detach().reshape(-1).tolist() for name, t in module.state_dict().items()}
    # Which LibTorch ran it: only the same library promises the same kernels as packtune's.
    with open("/proc/self/maps") as maps:
        libraries = [line.split()[-1] for line in maps if "libtorch_cpu" in line]
    with open(out_path, "w") as f:
        json.dump({"state": state, "libtorch": os.path.realpath(libraries[0]) if libraries else ""}, f)


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "modules":
        modules(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) in (5, 6) and sys.argv[1] == "train" and sys.argv[5:] in ([], ["--unfused"]):
        train(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:] == ["--unfused"])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
