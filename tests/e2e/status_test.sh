#!/usr/bin/env bash
# What a run shows (docs/status.md): on a terminal (a pty made by script(1)) a table redrawn in
# place with log lines above it; in a file, plain lines and no escape codes; with --quiet,
# warnings and the summary only.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
command -v script > /dev/null || { echo "script(1) (util-linux) is missing: run scripts/setup.sh"; exit 1; }

cat > "$work/config.json" <<'JSON'
{
  "seed": 3,
  "budget": {"unit": "epochs", "min": 0.25, "max": 0.75},
  "tuner": {"name": "hyperband", "eta": 3},
  "actors": 2,
  "data": {"train_size": 3000, "validation_size": 500},
  "model": {"family": "mlp", "depth": 1, "width": 64, "batch_size": 64, "optimizer": "adam"},
  "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.01}}
}
JSON
TERM=xterm script -qec "stty cols 100; '$packtune' run '$work/config.json' --out '$work/tty'" "$work/tty.typescript" > /dev/null
"$packtune" run "$work/config.json" --out "$work/file" > "$work/file.out" 2>&1
"$packtune" run "$work/config.json" --out "$work/quiet" --quiet > "$work/quiet.out" 2>&1

"$py" - "$work" <<'PY'
import json, re, sys
work = sys.argv[1]
tty = open(f"{work}/tty.typescript", "rb").read().decode("utf8", "replace").replace("\r", "")
redraws = re.findall(r"\x1b\[(\d+)F\x1b\[J", tty)
assert redraws, "no table was redrawn in place on the terminal"
# What the terminal holds at the end: each redraw erases the table drawn before it.
screen = [""]
for part in re.split(r"(\x1b\[\d+F\x1b\[J)", tty):
    m = re.fullmatch(r"\x1b\[(\d+)F\x1b\[J", part)
    if m:
        screen.pop()
        del screen[len(screen) - int(m.group(1)):]
        screen.append("")
    else:
        lines = part.split("\n")
        screen[-1] += lines[0]
        screen.extend(lines[1:])
text = "\n".join(screen)
assert text.count("== ") == 1, f"one table is left on the screen, the last:\n{text}"
table = text[text.index("== "):]
best = json.load(open(f"{work}/tty/best.json"))
rows = [json.loads(l) for l in open(f"{work}/tty/results.jsonl")]
top = {r["trial"] for r in rows if r["budget"] == 0.75}
jobs = re.search(r"finished config in [\d.]+ s: (\d+) jobs", text).group(1)
trials = len({r["trial"] for r in rows})
assert trials == 5, f"no trial limit: one whole sweep, 3 + 2 trials in two brackets, not {trials}"
assert f"trials: 0 running, 0 queued, {trials - len(top)} paused, {len(top)} finished, 0 failed; {jobs} jobs done" in table, table
assert f"best: trial {best['trial']} val_accuracy" in table, table
assert f"rungs: | 0.25: {len({r['trial'] for r in rows})} reached | 0.75: {len(top)} reached" in table, table
assert re.search(r"^0 +\S+ +cpu", table, re.M) and re.search(r"^1 +\S+ +cpu", table, re.M), table
assert "reached budget" not in text, "the table replaces the per-trial lines on a terminal"
assert table.index("trials:") < text.index("finished config in"), "the summary follows the last table"
for line in table[:table.index("checkpoints:")].splitlines():
    assert len(line) < 100, f"wider than the terminal: {line}"

plain = open(f"{work}/file.out").read()
assert "\x1b[" not in plain.replace("\x1b[32m", "").replace("\x1b[m", ""), "escape codes in a file"
jobs = int(re.search(r"finished config in [\d.]+ s: (\d+) jobs", plain).group(1))
assert "== " not in plain and len(re.findall(r"trial +\d+ reached budget", plain)) == jobs, plain
assert "finished config in" in plain and "best trial" in plain, plain

quiet = open(f"{work}/quiet.out").read()
assert " info " not in quiet and "reached budget" not in quiet, quiet
assert "finished config in" in quiet and "best trial" in quiet, quiet
print(f"1 passed: {len(redraws)} redraws on the terminal; plain and quiet output as documented")
PY
