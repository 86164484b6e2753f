"""The package is importable as `searchsync`, also beside an application's own `consumer.py`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import searchsync
from searchsync.cli import main


def test_imports_beside_a_module_named_consumer(tmp_path: Path) -> None:
    (tmp_path / "consumer.py").write_text("NAME = 'the application own consumer'\n")
    probe = (
        "import consumer, searchsync, searchsync.writer, searchsync.cli;"
        "print(consumer.NAME); print(searchsync.writer.__name__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["the application own consumer", "searchsync.writer"]


def test_version_is_the_distribution_version(capsys: object) -> None:
    from importlib.metadata import version

    assert searchsync.__version__ == version("searchsync")
    assert main(["--version"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert out.strip() == f"searchsync {searchsync.__version__}"


def test_python_dash_m_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "searchsync", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "usage: searchsync" in done.stdout
