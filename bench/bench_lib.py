"""bench_lib: what the Python benches share. It is a library, not a bench: nothing runs it.

peer_bench, peers_bench, hyperband_bench and tuner_bench import it from this folder (run as
bench/NAME.py, Python puts the folder on sys.path; the build's build/bench/NAME wrappers insert
it). The standard library only: the benches' driver sides run under any python3, and the peers'
side of peers_bench and tuner_bench imports it again inside the peers' venvs.

  BenchError, run_main               a bench's failure, and the exit status its main() returns
  run_timed, load_average            one command timed as a whole process; the machine's load
  apply_preset, parse_ways           --quick / --smoke defaults; a --ways list checked
  DEFAULT_DATA_DIR, resolve_data_dir where Fashion-MNIST is (--data-dir, $PACKTUNE_DATA_DIR)
  set_data_sizes                     --train-size, --validation-size and --max-pack in a config
  DEFAULT_PEERS_PYTHON, add_peers_python_option
                                     the peers' venv (scripts/setup-peers.sh)
  read_reports                       a packtune run's results.jsonl
  hyperband_schedule, sweep_trials   Hyperband's brackets as packtune counts them
  PLOTLY_FILES, installed_plotly, PAGE_END, write_self_contained_page
                                     the offline HTML pages of peers_bench and tuner_bench

See docs/benchmarks.md for the benches themselves.
"""
import json
import os
import signal
import subprocess
import sys
import time

DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"
DEFAULT_PEERS_PYTHON = os.path.expanduser("~/.cache/packtune/peers-venv/bin/python")
PLOTLY_FILES = ("/usr/share/python3-plotly/plotly.js", "/usr/share/javascript/plotly/plotly.min.js")


class BenchError(Exception):
    pass


def run_main(name, bench, a):
    """(0, bench(a)), or the exit status a benchmark's main() returns instead: (1, None) after
    printing a BenchError as "NAME: message", (130, None) on Ctrl-C."""
    try:
        return 0, bench(a)
    except BenchError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 1, None
    except KeyboardInterrupt:
        return 130, None


def load_average():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def run_timed(command, out_path, err_path, what, env=None, timeout=None):
    """Runs `command` with its output in files; returns its wall seconds. Past `timeout`
    seconds the command and everything it started (its session) are killed: BenchError."""
    start = time.perf_counter()
    with open(out_path, "w") as out, open(err_path, "w") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env, start_new_session=True)
        try:
            rc = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            with open(err_path) as f:
                tail = f.read()[-1500:]
            raise BenchError(f"{what} gave no result within {timeout:g} s and was killed: {' '.join(command)}\n{tail}")
    wall = time.perf_counter() - start
    if rc != 0:
        with open(err_path) as f:
            tail = f.read()[-3000:]
        raise BenchError(f"{what} exited {rc}: {' '.join(command)}\n{tail}")
    return wall


def apply_preset(a, preset):
    """Sets each of `preset`'s options that the command line left unset (None)."""
    for key, value in preset.items():
        if getattr(a, key) is None:
            setattr(a, key, value)


def parse_ways(parser, text, ways):
    """--ways' comma-separated names as a list; an unknown one is a usage error."""
    chosen = [w for w in text.split(",") if w]
    for w in chosen:
        if w not in ways:
            parser.error(f"--ways: unknown way {w!r}; expected some of {','.join(ways)}")
    return chosen


def resolve_data_dir(given):
    """Fashion-MNIST's folder: --data-dir, else $PACKTUNE_DATA_DIR, else DEFAULT_DATA_DIR."""
    return given or os.environ.get("PACKTUNE_DATA_DIR") or DEFAULT_DATA_DIR


def set_data_sizes(config, train_size, validation_size, max_pack, data_dir=None):
    """Writes a bench's --train-size, --validation-size, --max-pack (and data folder) into an
    experiment config; returns its data block. train_size 0 means every image the validation
    split leaves, which the config says by leaving the key out; None keeps the config's."""
    data = config.setdefault("data", {})
    if data_dir is not None:
        data["dir"] = data_dir
    if train_size:
        data["train_size"] = train_size
    else:
        data.pop("train_size", None)
    if validation_size is not None:
        data["validation_size"] = validation_size
    if max_pack is not None:
        config["max_pack"] = max_pack
    return data


def add_peers_python_option(parser):
    """--peers-python: the python of the peers' venv (scripts/setup-peers.sh)."""
    parser.add_argument("--peers-python", default=os.environ.get("PACKTUNE_PEERS_PYTHON", DEFAULT_PEERS_PYTHON),
                        help="python of the peers' venv (default $PACKTUNE_PEERS_PYTHON, else " +
                             DEFAULT_PEERS_PYTHON + ")")


def read_reports(out_dir):
    """A packtune run's reports: its results.jsonl, one dict a line."""
    with open(os.path.join(out_dir, "results.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def hyperband_schedule(packtune, min_budget, max_budget, eta):
    """Hyperband's brackets as `packtune brackets --json` gives them."""
    out = subprocess.run([packtune, "brackets", "--tuner", "hyperband", "--min-budget", repr(min_budget),
                          "--max-budget", repr(max_budget), "--eta", str(eta), "--json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise BenchError(f"packtune brackets failed: {out.stderr.strip()}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def sweep_trials(sched):
    """Configs in the bottom rungs of one sweep (17 for eta 3 over 0.25 ... 2.25)."""
    total = 0
    for b in sched.get("brackets", []):
        rungs = b.get("rungs") or []
        first = rungs[0] if rungs else b
        total += int(first.get("configs", first.get("n", 0)))
    return total


def installed_plotly(given=None):
    """`given`, else the first of PLOTLY_FILES that exists (Debian's python3-plotly), else None."""
    return given or next((f for f in PLOTLY_FILES if os.path.exists(f)), None)


# The end of such a page's script: what a headless browser test reads back (the errors the page
# caught and the points each chart drew; tests/bench/peers_page_test.py).
PAGE_END = """// What a headless browser test reads back.
var check = document.createElement('pre');
check.id = 'page-check';
check.style.display = 'none';
check.textContent = JSON.stringify({errors: pageErrors, charts: drawn});
document.body.appendChild(check);
</script></body></html>
"""


def write_self_contained_page(path, template, data, plotly_path):
    """Writes `template` with plotly.js in place of /*plotly*/ and `data` as JSON in place of
    /*data*/: one page that fetches nothing when it opens (peers_bench, tuner_bench). Without
    plotly.js the page still carries the data and its tables."""
    data_text = json.dumps(data).replace("</", "<\\/")
    plotly = ""
    if plotly_path and os.path.exists(plotly_path):
        with open(plotly_path) as f:
            plotly = f.read().replace("</script", "<\\/script")
    head, rest = template.split("/*plotly*/", 1)
    middle, tail = rest.split("/*data*/", 1)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(head + plotly + middle + data_text + tail)
    os.replace(tmp, path)
