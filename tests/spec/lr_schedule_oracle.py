"""Writes lr_schedule_oracle.json: the learning-rate factors PyTorch's own schedulers give, the
oracle of lr_schedule_test.cpp. Run with a Python that has torch (Debian's python3-torch,
which scripts/setup.sh installs):

    /usr/bin/python3 tests/spec/lr_schedule_oracle.py > tests/spec/lr_schedule_oracle.json

Each case steps an optimizer of base rate 1 through `total` steps and records the rate before
each step, as a training loop that calls scheduler.step() after optimizer.step() sees it."""
import json

import torch
from torch.optim import SGD
from torch.optim import lr_scheduler as S

WARMUP_START = 0.01  # torchvision's lr_warmup_decay


def rates(make, total):
    opt = SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    sched = make(opt)
    out = []
    for _ in range(total):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


def with_warmup(main, warmup):
    def make(opt):
        if warmup == 0:
            return main(opt)
        first = S.LinearLR(opt, start_factor=WARMUP_START, end_factor=1.0, total_iters=warmup)
        return S.SequentialLR(opt, [first, main(opt)], milestones=[warmup])
    return make


cases = []
for name, total, warmup, every, factor in [
    ("constant", 30, 6, 0, 0.1), ("cosine", 50, 0, 0, 0.1), ("cosine", 50, 5, 0, 0.1),
    ("linear", 37, 0, 0, 0.1), ("linear", 37, 4, 0, 0.1), ("step", 40, 0, 7, 0.5),
    ("step", 40, 3, 7, 0.5), ("one_cycle", 60, 0, 0, 0.1), ("one_cycle", 60, 10, 0, 0.1)]:
    left = total - warmup
    if name == "constant":
        main = lambda opt: S.LambdaLR(opt, lambda t: 1.0)
    elif name == "cosine":
        main = lambda opt: S.CosineAnnealingLR(opt, T_max=left, eta_min=0.0)
    elif name == "linear":
        main = lambda opt: S.LinearLR(opt, start_factor=1.0, end_factor=0.0, total_iters=left)
    elif name == "step":
        main = lambda opt: S.StepLR(opt, step_size=every, gamma=factor)
    if name == "one_cycle":
        pct = warmup / total if warmup else 0.3
        make = lambda opt: S.OneCycleLR(opt, max_lr=1.0, total_steps=total, pct_start=pct)
        # OneCycleLR's rate is max_lr / div_factor at step 0, whatever lr the group had.
        got = rates(make, total)
    else:
        got = rates(with_warmup(main, warmup), total)
    cases.append({"name": name, "total": total, "warmup": warmup, "step_every": every, "factor": factor,
                  "rates": got})
print(json.dumps({"torch": torch.__version__, "cases": cases}, indent=1))
