"""``python -m packtune.trackers mlflow DIR [--uri URI]`` and ``... tensorboard DIR --out OUT``:
what ``packtune export DIR --mlflow/--tensorboard`` runs (``... live DIR``: what ``packtune
run`` starts to export as it runs, live.py). Errors are one line, as the CLI's:
exit 2 for bad input (no results folder, an output folder in use), 1 for anything else (the
tracker's library missing or failing)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import List, Optional

from ..experiment import RunFolder, results_folder
from .follow import follow
from .live import SETUP, serve



def _fail(message: str, code: int) -> int:
    print(f"packtune: error: {message}", file=sys.stderr)
    return code


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m packtune.trackers")
    kinds = parser.add_subparsers(dest="tracker", required=True)
    to_mlflow = kinds.add_parser("mlflow", help="one MLflow run per trial, under a parent run")
    to_mlflow.add_argument("dir")
    to_mlflow.add_argument("--uri", help="tracking URI, or a folder for a local store (default: ./mlruns)")
    to_mlflow.add_argument("--follow", action="store_true", help="export as reports arrive, until the run finishes")
    to_tensorboard = kinds.add_parser("tensorboard", help="one TensorBoard event file per trial")
    to_tensorboard.add_argument("dir")
    to_tensorboard.add_argument("--out", required=True)
    to_tensorboard.add_argument("--follow", action="store_true", help="export as reports arrive, until the run finishes")
    live = kinds.add_parser("live", help="what packtune run starts to export as it runs (stdin and stdout: live.py)")
    live.add_argument("dir")
    live.add_argument("--mlflow", help="a tracking URI, or a folder for a local store")
    live.add_argument("--tensorboard", type=Path, help="the folder for the event files")
    args = parser.parse_args(argv)
    if args.tracker == "live":
        return serve(Path(args.dir), args.mlflow, args.tensorboard)
    option = f"--{args.tracker}"
    try:
        run = RunFolder(results_folder(args.dir))
    except FileNotFoundError as e:
        return _fail(str(e), 2)
    try:
        trials = len({report["trial"] for report in run.reports()})
        if args.tracker == "mlflow":
            import mlflow  # noqa: F401 -- it sets its loggers up on import; quieted below

            from .mlflow_export import export_mlflow, store_uri

            # MLflow's and Alembic's info lines (creating the database) are not the user's business.
            for name in ("mlflow", "alembic"):
                logging.getLogger(name).setLevel(logging.WARNING)
            if args.follow:
                parent = follow(run.dir, mlflow=args.uri or True).syncs[0].parent_id
                trials = len({report["trial"] for report in run.reports()})
            else:
                parent = export_mlflow(run, args.uri)
            uri = store_uri(args.uri)[0]
            print(f"exported {trials} trials of {run.name} to MLflow at {uri}: "
                  f"experiment {run.name}, parent run {parent}")
        else:
            from .tensorboard_export import export_tensorboard

            out = Path(args.out)
            if args.follow:
                follow(run.dir, tensorboard=out)
                trials = len({report["trial"] for report in run.reports()})
            else:
                export_tensorboard(run, out)
            print(f"exported {trials} trials of {run.name} to TensorBoard event files in {out}; "
                  f"view them with: tensorboard --logdir {out}")
    except KeyboardInterrupt:
        return _fail(f"{option} --follow: interrupted; the store keeps what it has, and a later export goes on", 130)
    except ModuleNotFoundError as e:
        return _fail(f"{option} needs the Python package {e.name} in {sys.executable}; {SETUP}", 1)
    except FileExistsError as e:
        return _fail(f"{option}: {e}", 2)
    except Exception as e:  # noqa: BLE001 -- one line, as every packtune error
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return _fail(f"{option}: {type(e).__name__}: {first}", 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
