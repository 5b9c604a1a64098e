#!/usr/bin/env python3
"""reproduce: does the same config and seed give the same numbers, bit for bit?

  pair    the config run twice, the second beside a busy loop on one core (a loaded machine);
          every report of the two must be equal bit for bit
  kills   --kills N runs of the config, each killed with kill -9 at a random point (a random
          share of the first run's wall time) and resumed with `packtune run --resume`, as
          often as it takes to finish when --repeat-kills is given; each must equal the first run

The configs (--config, repeatable; default both):
  example     examples/fashion_mnist.json (random search, 20 trials, 2 actors)
  hyperband   bench/hyperband_repro.json (the example's space under Hyperband, eta 3, 40 to 360
              steps, a report every 40, one actor, seed 11: 69 reports)

Timing is only used to pick kill points; a result never depends on it. Prints one line per
check and a JSON summary with --json; exit 1 when any report differs.

Run from the repository root after the build: bench/reproduce.py [--kills 10]. See
docs/benchmarks.md (reproduce.py).
"""
import argparse
import datetime
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = {"example": os.path.join(ROOT, "examples", "fashion_mnist.json"),
           "hyperband": os.path.join(ROOT, "bench", "hyperband_repro.json")}
COMPARE = os.path.join(ROOT, "tests", "e2e", "compare_results.py")


def run(packtune, args, log):
    with open(log, "w") as out:
        return subprocess.run([packtune, "run", *args, "--quiet"], stdout=out, stderr=subprocess.STDOUT).returncode


def same(a, b):
    done = subprocess.run([sys.executable, COMPARE, a, b], capture_output=True, text=True)
    return done.returncode == 0, (done.stdout + done.stderr).strip().splitlines()[-1]


def busy_loop():
    # One core spinning at normal priority while the run goes on.
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--config", action="append", choices=sorted(CONFIGS))
    parser.add_argument("--kills", type=int, default=3, help="kill -9 + resume cycles per config")
    parser.add_argument("--seed", type=int, default=1, help="picks the kill points")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    packtune = os.path.join(args.build, "src", "packtune")
    if not os.access(packtune, os.X_OK):
        print(f"reproduce: no {packtune}; build first (cmake --build build --target packtune)", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="packtune-reproduce-")
    summary = {"date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"), "load": os.getloadavg()[0],
               "checks": []}
    failed = False

    def check(name, ok, detail):
        nonlocal failed
        failed |= not ok
        summary["checks"].append({"check": name, "equal": ok, "detail": detail})
        print(f"{name}: {'EQUAL' if ok else 'DIFFERENT'} ({detail})", flush=True)

    for name in args.config or sorted(CONFIGS):
        config = CONFIGS[name]
        ref = os.path.join(work, f"{name}-ref")
        start = time.monotonic()
        if run(packtune, [config, "--out", ref], ref + ".log") != 0:
            print(f"reproduce: {name}: the reference run failed; see {ref}.log", file=sys.stderr)
            return 1
        wall = time.monotonic() - start
        print(f"{name}: reference run {wall:.1f} s", flush=True)
        busy = busy_loop()
        try:
            loaded = os.path.join(work, f"{name}-loaded")
            code = run(packtune, [config, "--out", loaded], loaded + ".log")
        finally:
            busy.kill()
            busy.wait()
        if code != 0:
            check(f"{name} beside a busy loop", False, f"exit {code}")
        else:
            check(f"{name} beside a busy loop", *same(f"{ref}/results.jsonl", f"{loaded}/results.jsonl"))
        for i in range(args.kills):
            out = os.path.join(work, f"{name}-kill{i}")
            at = rng.uniform(0.05, 0.95) * wall
            driver = subprocess.Popen([packtune, "run", config, "--out", out, "--quiet"], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            try:
                driver.wait(timeout=at)
            except subprocess.TimeoutExpired:
                driver.send_signal(signal.SIGKILL)
                driver.wait()
            time.sleep(0.5)  # its actors follow it (parent-death signal)
            reports = sum(1 for _ in open(f"{out}/results.jsonl")) if os.path.exists(f"{out}/results.jsonl") else 0
            code = run(packtune, ["--resume", out], out + ".resumed.log")
            if code != 0:
                check(f"{name} killed at {at:.1f} s ({reports} reports), resumed", False, f"resume exit {code}")
                continue
            ok, detail = same(f"{ref}/results.jsonl", f"{out}/results.jsonl")
            check(f"{name} killed at {at:.1f} s ({reports} reports), resumed", ok, detail)
    if args.json:
        print(json.dumps(summary, indent=1))
    print(f"work folder: {work}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
