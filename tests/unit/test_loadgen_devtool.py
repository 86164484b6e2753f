"""``python -m searchsync.devtools.loadgen``: its arguments and its progress drawing (the traffic
itself: tests/integration/test_writer.py)."""

from __future__ import annotations

import io

import pytest
from searchsync.devtools.loadgen.__main__ import Progress, main
from searchsync.exit_codes import ExitCode

NEEDED = ["--pages", "1", "--updates", "1", "--concurrency", "1"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--pages", "0", "--updates", "1", "--concurrency", "1"],
        ["--pages", "1", "--updates", "1"],
        [*NEEDED, "--delete-ratio", "0.9"],
        [*NEEDED, "--updates", "-1"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == ExitCode.USAGE
    assert "usage: python -m searchsync.devtools.loadgen" in capsys.readouterr().err


def test_a_bad_setting_exits_2_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SEARCHSYNC_MYSQL_PORT", "many")
    assert main(NEEDED) == ExitCode.USAGE
    assert capsys.readouterr().err.startswith("config error: mysql.port: expected")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_tty_redraws_one_line() -> None:
    now = [0.0]
    stream = _Tty()
    progress = Progress(stream, clock=lambda: now[0], width=10)
    for done in range(1, 11):
        now[0] += 1.0
        progress(done, 10)
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.endswith("10/10 100.0%\n")
    assert text.count("\r") == 10
    assert "[#####-----] 5/10" in text


def test_progress_elsewhere_prints_periodic_lines() -> None:
    now = [0.0]
    stream = io.StringIO()
    progress = Progress(stream, clock=lambda: now[0], interval_s=5.0)
    for done in range(1, 101):
        now[0] += 0.1  # 10 s in all: the first call, one at 5 s, one at 10 s and the last
        progress(done, 100)
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert lines[0] == "loadgen: 1/100 (1.0%)" and lines[-1] == "loadgen: 100/100 (100.0%)"
    assert 3 <= len(lines) <= 4
