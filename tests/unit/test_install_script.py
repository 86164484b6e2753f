"""deploy/install.sh: the Python-only mode (`make venv`, `make dist`) asks for no Debian package
of the stack, on a machine where none of them is on PATH; the default mode still does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "install.sh"


def _bare_path(tmp_path: Path) -> str:
    """A PATH with python3 and an `id` of a user who is not root (so nothing is installed): no
    mariadbd, mvn, java, kcat, promtool or curl."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    (bin_dir / "id").write_text("#!/bin/sh\necho 1000\n")
    (bin_dir / "id").chmod(0o755)
    return str(bin_dir)


def _install(mode: str | None, tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash")
    assert bash is not None
    env = {"PATH": _bare_path(tmp_path), "HOME": os.environ.get("HOME", "/tmp"), **extra}
    argv = [bash, str(SCRIPT), *([mode] if mode else [])]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)


def test_python_mode_needs_nothing_of_the_stack(tmp_path: Path) -> None:
    result = _install("python", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == result.stderr == ""


def test_the_default_mode_still_wants_the_stack(tmp_path: Path) -> None:
    result = _install(None, tmp_path, ES_JAVA_HOME="/nonexistent")  # past the JDK 21+ check
    assert result.returncode == 1
    assert "lacks: mariadb-server" in result.stderr
    assert "openjdk-17-jdk-headless" in result.stderr


def test_an_unknown_mode_is_a_usage_error(tmp_path: Path) -> None:
    result = _install("everything", tmp_path)
    assert result.returncode == 2
    assert "usage: install.sh [stack|python]" in result.stderr
