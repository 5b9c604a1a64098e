"""packtune.run and packtune.load on real runs: DataFrames against the files, the overrides,
the errors with the CLI's line, progress, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

import packtune
from conftest import tiny_config


def test_results_are_one_row_per_report(tiny_run: packtune.Run) -> None:
    lines = [json.loads(line) for line in (tiny_run.dir / "results.jsonl").read_text().splitlines()]
    frame = tiny_run.results()
    assert len(frame) == len(lines) == 8  # 4 trials, reports at 0.5 and 1 epoch
    for (_, row), report in zip(frame.iterrows(), lines):
        assert row["trial"] == report["trial"] and row["budget"] == report["budget"]
        assert row["val_accuracy"] == report["val_accuracy"] and row["val_loss"] == report["val_loss"]
        assert row["config.lr"] == report["config"]["lr"] and row["config.width"] == 64
    columns = list(frame.columns)
    assert columns[:2] == ["trial", "budget"]
    # The report's fields, then its metrics, then the config: as the CSV export orders them.
    assert columns.index("job_start") < columns.index("val_accuracy") < columns.index("config.lr")


def test_trials_are_one_row_per_trial_with_the_config_flattened(tiny_run: packtune.Run) -> None:
    frame = tiny_run.trials()
    assert list(frame["trial"]) == [0, 1, 2, 3]
    assert (frame["budget"] == 1.0).all() and (frame["reports"] == 2).all()
    reports = tiny_run.reports()
    for _, row in frame.iterrows():
        last = [r for r in reports if r["trial"] == row["trial"] and r["budget"] == 1.0][0]
        assert row["val_accuracy"] == last["val_accuracy"]
        assert row["config.lr"] == last["config"]["lr"] and row["config.dropout"] == last["config"]["dropout"]
    best = tiny_run.best()
    assert best is not None
    assert list(frame.loc[frame["best"], "trial"]) == [best["trial"]]


def test_best_config_and_journal(tiny_run: packtune.Run) -> None:
    best = tiny_run.best()
    assert best is not None
    top = max(r["val_accuracy"] for r in tiny_run.reports())
    assert best["value"] == top and best["metric"] == "val_accuracy"
    assert 0 <= best["test"]["test_accuracy"] <= 1
    # The override is in the config as run.
    assert tiny_run.config["tuner"]["trials"] == 4 and tiny_run.config["name"] == "tiny"
    journal = tiny_run.journal()
    assert journal[0]["packtune_journal"] >= 1 and "finished" in journal[-1]
    assert sum("result" in entry for entry in journal) == 4
    assert tiny_run.finished()


def test_load_reads_the_same_folder(tiny_run: packtune.Run) -> None:
    again = packtune.load(tiny_run.dir)
    assert again.results().equals(tiny_run.results())
    with pytest.raises(FileNotFoundError, match="--out of a packtune run"):
        packtune.load(tiny_run.dir / "nothing")


def test_a_torn_last_line_is_left_out(tiny_run: packtune.Run, tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((tiny_run.dir / "config.json").read_text())
    text = (tiny_run.dir / "results.jsonl").read_text()
    (tmp_path / "results.jsonl").write_text(text + '{"trial": 9, "bud')
    assert len(packtune.load(tmp_path).results()) == 8
    (tmp_path / "results.jsonl").write_text('{"trial": 9, "bud\n' + text)
    with pytest.raises(ValueError, match="line 1 is not JSON"):
        packtune.load(tmp_path).results()


def test_a_bad_config_raises_config_error_with_the_cli_line(binary: Path, tmp_path: Path) -> None:
    bad = tiny_config(tuner={"name": "random", "trials": 3, "eta": 3})
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    cli = subprocess.run([str(binary), "run", str(path), "--out", str(tmp_path / "cli")], capture_output=True,
                         text=True)
    assert cli.returncode == 2
    line = cli.stderr.strip()
    assert line.startswith("packtune: error: ") and "eta" in line
    with pytest.raises(packtune.ConfigError) as caught:
        packtune.run(path, out=tmp_path / "py", progress="none")
    assert caught.value.line == line
    assert str(caught.value) == line[len("packtune: error: "):]
    assert not (tmp_path / "py").exists()
    # The same through a dict, and a bad override.
    with pytest.raises(packtune.ConfigError, match="eta"):
        packtune.run(bad, out=tmp_path / "dict", progress="none")
    with pytest.raises(packtune.ConfigError, match="--no-such-flag"):
        packtune.run(tiny_config(), out=tmp_path / "flag", no_such_flag=1, progress="none")
    with pytest.raises(packtune.ConfigError, match="--trials"):
        packtune.run(tiny_config(), out=tmp_path / "trials", trials="many", progress="none")


def test_a_failed_run_raises_run_error_with_the_log_tail(tmp_path: Path) -> None:
    # No actor: the driver waits for one to join and gives up after join_timeout_seconds.
    config = tiny_config(actors=0, join_timeout_seconds=1)
    with pytest.raises(packtune.RunError) as caught:
        packtune.run(config, out=tmp_path / "out", progress="none")
    error = caught.value
    assert error.returncode == 1
    assert error.line.startswith("packtune: error: no actor joined")
    assert error.log == str(tmp_path / "out" / "driver.log")
    assert "driver listening on" in error.log_tail
    assert "no actor joined" in str(error) and "driver listening on" in str(error)


def test_default_out_progress_lines_and_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture) -> None:
    monkeypatch.chdir(tmp_path)
    config = tiny_config(name="lines", data={"train_size": 1000, "validation_size": 500})
    run = packtune.run(config, trials=2, progress="lines")
    printed = capsys.readouterr().out
    assert run.dir.parent == Path("runs") and run.dir.name.startswith("lines-")
    assert "reached budget 1" in printed and f"best trial {run.best()['trial']}" in printed
    assert not list(tmp_path.glob(".packtune-config-*"))  # the dict's file is gone
    reports = run.reports()
    again = run.resume(progress="none")
    assert again.dir == run.dir and again.reports() == reports  # finished: nothing added


def test_progress_bar_counts_jobs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("tqdm")
    config = tiny_config(name="bar", data={"train_size": 1000, "validation_size": 500})
    packtune.run(config, out=tmp_path / "out", trials=2, progress="bar")
    captured = capsys.readouterr()
    assert "2job" in captured.err and "val_accuracy" in captured.err
    # The summary is printed above the bar, the info lines are not.
    assert "best trial" in captured.err + captured.out and "driver listening" not in captured.err + captured.out


def test_an_interrupt_stops_the_run_and_resume_finishes_it(binary: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    out, hold = tmp_path / "out", tmp_path / "hold"
    # The driver holds after its second report; then this process gets the Ctrl-C.
    monkeypatch.setenv("PACKTUNE_TEST_HOLD", f"driver.reported#2:{hold}")
    forward = subprocess.Popen.send_signal

    def send_signal(child: subprocess.Popen, sig: int) -> None:
        forward(child, sig)
        hold.unlink()  # let the driver go on only once it has the interrupt

    monkeypatch.setattr(subprocess.Popen, "send_signal", send_signal)

    def interrupt() -> None:
        for _ in range(1200):  # a bound on a hung run, not a window the test depends on
            if hold.exists() and hold.read_text().strip():
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.1)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        packtune.run(tiny_config(name="interrupted"), out=out, trials=4, progress="none")
    interrupted = packtune.load(out)
    assert not interrupted.finished() and 2 <= len(interrupted.reports()) < 8
    monkeypatch.delenv("PACKTUNE_TEST_HOLD")
    resumed = interrupted.resume(progress="none")
    assert resumed.finished() and len(resumed.reports()) == 8
    assert sorted((r["trial"], r["budget"]) for r in resumed.reports()) == [
        (t, b) for t in range(4) for b in (0.5, 1.0)]
