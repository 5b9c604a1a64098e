"""Finding the binary: an argument, PACKTUNE_BIN, PATH, and one line when none is there."""

from __future__ import annotations

from pathlib import Path

import pytest

import packtune


def test_the_argument_comes_first(binary: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PACKTUNE_BIN", "/nonexistent/packtune")
    assert packtune.find_binary(binary) == binary.resolve()


def test_packtune_bin_then_path(binary: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PACKTUNE_BIN", str(binary))
    assert packtune.find_binary() == binary.resolve()
    monkeypatch.delenv("PACKTUNE_BIN")
    (tmp_path / "packtune").symlink_to(binary)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert packtune.find_binary() == tmp_path / "packtune"


def test_none_found_says_where_it_looked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PACKTUNE_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(packtune.BinaryNotFound) as caught:
        packtune.find_binary()
    message = str(caught.value)
    assert "\n" not in message
    assert "binary=" in message and "PACKTUNE_BIN" in message and "PATH" in message


def test_a_named_binary_that_is_not_there_is_an_error(binary: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Named but missing: no silent fall back to another packtune.
    monkeypatch.setenv("PATH", str(binary.parent))
    with pytest.raises(packtune.BinaryNotFound, match="PACKTUNE_BIN=/nonexistent/packtune"):
        monkeypatch.setenv("PACKTUNE_BIN", "/nonexistent/packtune")
        packtune.find_binary()
    with pytest.raises(packtune.BinaryNotFound, match="binary=/nonexistent/pt"):
        packtune.find_binary("/nonexistent/pt")
