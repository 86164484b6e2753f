"""The wheel, installed alone into a clean virtualenv, is the whole product for a user: no checkout,
no `.[dev]`. `make test` passes the wheel `make dist` built (TEST_DIST=dist); run on
its own, this module builds one (the sdist, then the wheel from the sdist, as `make dist` does).

Its dependencies come from PyPI through pip's cache, so a second run installs in seconds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "consumer" / "searchsync"
MIGRATIONS = ROOT / "schemas" / "sql"
DIST_ENV = "TEST_DIST"
SOURCE_FILES = ("pyproject.toml", "README.md", "LICENSE")  # what the build reads
SOURCE_DIRS = ("consumer", "schemas")  # consumer/searchsync/_resources/sql links to schemas/sql
OPENSEARCH_EXTRA = "pip install 'searchsync[opensearch]'"


def _run(
    argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=600, check=False, env=env, cwd=cwd
    )


def _clean_env() -> dict[str, str]:
    """The environment without searchsync's settings or a virtualenv of the caller's."""
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
    return {
        k: v for k, v in os.environ.items() if not k.startswith("SEARCHSYNC_") and k not in drop
    }


@pytest.fixture(scope="module")
def dist_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get(DIST_ENV)
    if given:
        return (ROOT / given).resolve()
    # from a copy without build/ or egg-info: their stale file lists could fill the gaps
    source = tmp_path_factory.mktemp("source")
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in SOURCE_FILES:
        shutil.copy2(ROOT / name, source / name)
    for name in SOURCE_DIRS:
        shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=skip)
    out = tmp_path_factory.mktemp("dist")
    built = _run([sys.executable, "-m", "build", "--outdir", str(out), str(source)])
    assert built.returncode == 0, f"python -m build failed:\n{built.stdout}\n{built.stderr}"
    return out


@pytest.fixture(scope="module")
def wheel(dist_dir: Path) -> Path:
    wheels = sorted(dist_dir.glob("searchsync-*.whl"))
    assert len(wheels) == 1, f"expected one searchsync wheel in {dist_dir}, found {wheels}"
    return wheels[0]


@pytest.fixture(scope="module")
def venv_bin(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    venv = tmp_path_factory.mktemp("clean") / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], env=_clean_env())
    assert made.returncode == 0, made.stderr
    pip = [
        str(venv / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
    ]
    installed = _run([*pip, str(wheel)], env=_clean_env(), cwd=venv)
    assert installed.returncode == 0, f"pip install {wheel.name} failed:\n{installed.stderr}"
    yield venv / "bin"


def _searchsync(venv_bin: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    # run from the virtualenv's directory: nothing of the checkout can be imported from there
    return _run(
        [str(venv_bin / "searchsync"), *args], env={**_clean_env(), **env}, cwd=venv_bin.parent
    )


def test_searchsync_version_from_the_clean_venv(venv_bin: Path) -> None:
    version = _searchsync(venv_bin, "--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == "searchsync 0.1.0"


def test_schema_sql_prints_every_packaged_migration(venv_bin: Path) -> None:
    schema = _searchsync(venv_bin, "schema", "sql")
    assert schema.returncode == 0, schema.stderr
    expected = sorted(p.name for p in MIGRATIONS.glob("[0-9][0-9][0-9]_*.sql"))
    assert expected, "no migrations in schemas/sql"
    printed = [
        line.split()[-1] for line in schema.stdout.splitlines() if line.startswith("-- migration ")
    ]
    assert printed == expected
    assert "CREATE TABLE IF NOT EXISTS search_outbox" in schema.stdout


def test_the_installed_package_is_the_wheel_not_the_checkout(venv_bin: Path) -> None:
    where = _run(
        [str(venv_bin / "python"), "-c", "import searchsync; print(searchsync.__file__)"],
        env=_clean_env(),
        cwd=venv_bin.parent,
    )
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(venv_bin.parent)


def test_elasticsearch_needs_no_opensearch_py(venv_bin: Path) -> None:
    probe = _run(
        [
            str(venv_bin / "python"),
            "-c",
            "import importlib.util as u; print(u.find_spec('opensearchpy'))",
        ],
        env=_clean_env(),
    )
    assert probe.stdout.strip() == "None", "opensearch-py is installed without the extra"
    check = _searchsync(venv_bin, "config", "check")
    assert check.returncode == 0, check.stderr
    assert check.stdout.splitlines()[-1] == "config ok"
    assert 'search.engine = "elasticsearch"' in check.stdout


def test_opensearch_without_the_extra_names_the_install_command(venv_bin: Path) -> None:
    check = _searchsync(venv_bin, "config", "check", SEARCHSYNC_SEARCH_ENGINE="opensearch")
    assert check.returncode == 2, check.stdout
    first = check.stderr.splitlines()[0]
    assert first.startswith("config error: search.engine:")
    assert OPENSEARCH_EXTRA in first


def test_package_data_covers_every_non_python_file(wheel: Path) -> None:
    """A resource added under consumer/searchsync/ but missed by [tool.setuptools.package-data]
    would be read from the checkout in development and be absent for a user: compare."""
    source = {  # _resources/sql is a link to schemas/sql: follow it
        (Path(top) / name).relative_to(PACKAGE.parent).as_posix()
        for top, dirs, names in os.walk(PACKAGE, followlinks=True)
        if "__pycache__" not in Path(top).parts
        for name in names
        if not name.endswith((".py", ".pyc"))
    }
    with zipfile.ZipFile(wheel) as archive:
        packed = {n for n in archive.namelist() if n.startswith("searchsync/")}
    assert "searchsync/py.typed" in source
    assert source <= packed, f"not in the wheel: {sorted(source - packed)}"
