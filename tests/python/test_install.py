"""`pip install ./python` makes an installable, importable, typed package."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "python"


def test_pip_installs_the_package(tmp_path: Path) -> None:
    # A copy: setuptools builds in the folder it is given (build/, *.egg-info).
    source = tmp_path / "python"
    shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    venv = tmp_path / "venv"
    # The venv of this Python, without network: its own setuptools builds the package.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps",
                              "--no-index", "--disable-pip-version-check", str(source)],
                             capture_output=True, text=True, cwd=tmp_path)
    assert install.returncode == 0, install.stderr
    # From another folder and without PYTHONPATH, so the installed copy is the one imported.
    shown = subprocess.run([str(python), "-c", "import packtune, pathlib; p = pathlib.Path(packtune.__file__).parent; "
                            "print(p); print((p / 'py.typed').exists(), (p / 'trackers' / '__main__.py').exists())"],
                           capture_output=True, text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, check=True)
    folder, marks = shown.stdout.splitlines()
    assert Path(folder).is_relative_to(venv) and marks == "True True"
