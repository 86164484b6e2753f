"""`searchsync config check --grants` on the real MariaDB: the consumer's user passes the
least-privilege check; the application user (which writes wiki_page) is reported, exit 1."""

from __future__ import annotations

import os

import orjson
import pytest
from searchsync.cli import main
from searchsync.exit_codes import ExitCode

pytestmark = [pytest.mark.integration]


def _check(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], user: str, password: str
) -> tuple[int, dict[str, object], str]:
    monkeypatch.setenv("SEARCHSYNC_MYSQL_USER", user)
    monkeypatch.setenv("SEARCHSYNC_MYSQL_PASSWORD", password)
    code = main(["config", "check", "--grants", "--json"])
    captured = capsys.readouterr()
    grants = orjson.loads(captured.out)["grants"]
    assert isinstance(grants, dict)
    return code, grants, captured.out + captured.err


def test_the_consumer_user_passes_and_the_app_user_is_reported(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = os.environ.get
    code, report, text = _check(
        monkeypatch,
        capsys,
        env("SEARCHSYNC_MYSQL_USER", "searchsync"),
        env("SEARCHSYNC_MYSQL_PASSWORD", "searchsync"),
    )
    assert code == ExitCode.OK, report
    assert report["violations"] == [] and "wiki_page" in str(report["tables"])
    assert any("wiki_page" in g for g in report["grants"])  # type: ignore[union-attr]
    assert "*A4A0" not in text and "IDENTIFIED BY PASSWORD '***'" in text  # no password hash

    code, report, _ = _check(
        monkeypatch,
        capsys,
        env("APP_DB_USER", "searchsync_app"),
        env("APP_DB_PASSWORD", "searchsync_app"),
    )
    assert code == ExitCode.FAILURE
    (violation,) = [v for v in report["violations"] if ".wiki_page:" in v]  # type: ignore[union-attr]
    assert violation.startswith("DELETE, INSERT, UPDATE on ")
