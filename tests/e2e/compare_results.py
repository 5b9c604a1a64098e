#!/usr/bin/env python3
"""Compares two results.jsonl files report by report: the same (trial, budget) pairs, the same
trial configs, and metrics equal bit for bit (the same config and seed on the same machine give
the same numbers, docs/planner.md), or within --tolerance. Exit 0 when they match, 1 (with the
differences on stderr) when not, 2 for bad usage.

usage: compare_results.py A/results.jsonl B/results.jsonl [--tolerance 0]
"""
import json
import math
import sys

METRICS = ("val_accuracy", "val_loss", "train_loss")


def load(path):
    reports = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            key = (row["trial"], row["budget"])
            if key in reports:
                raise SystemExit(f"{path}:{number}: trial {key[0]} reported budget {key[1]} twice")
            reports[key] = row
    return reports


def close(a, b, tolerance):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return abs(a - b) <= tolerance


def main(argv):
    tolerance = 0.0
    args = list(argv)
    if "--tolerance" in args:
        i = args.index("--tolerance")
        try:
            tolerance = float(args[i + 1])
        except (IndexError, ValueError):
            print("compare_results.py: --tolerance needs a number", file=sys.stderr)
            return 2
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    a, b = load(args[0]), load(args[1])
    problems = []
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            problems.append(f"trial {key[0]} budget {key[1]}: only in {args[0] if key in a else args[1]}")
            continue
        ra, rb = a[key], b[key]
        if ra.get("exploit") != rb.get("exploit"):
            problems.append(f"trial {key[0]} budget {key[1]}: exploits differ: {ra.get('exploit')} vs {rb.get('exploit')}")
        if ra.get("config") != rb.get("config"):
            problems.append(f"trial {key[0]}: configs differ: {ra.get('config')} vs {rb.get('config')}")
        for metric in METRICS:
            if metric in ra or metric in rb:
                if metric not in ra or metric not in rb or not close(ra[metric], rb[metric], tolerance):
                    problems.append(f"trial {key[0]} budget {key[1]}: {metric} {ra.get(metric)} vs {rb.get(metric)}")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"{len(problems)} difference(s) over {len(set(a) | set(b))} reports (tolerance {tolerance:g})",
              file=sys.stderr)
        return 1
    print(f"{len(a)} reports match " + (f"within {tolerance:g}" if tolerance else "bit for bit"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
