"""The integration tests' deadlines stretch with TEST_TIME_SCALE, and a bad value is refused."""

from __future__ import annotations

import pytest

from tests.timing import scaled


def test_deadlines_are_stretched_by_the_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEST_TIME_SCALE", raising=False)
    assert scaled(60) == 60
    monkeypatch.setenv("TEST_TIME_SCALE", "2.5")
    assert scaled(60) == 150


@pytest.mark.parametrize("bad", ["0", "-1", "fast", "nan", "inf"])
def test_a_bad_scale_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    monkeypatch.setenv("TEST_TIME_SCALE", bad)
    with pytest.raises(ValueError, match="TEST_TIME_SCALE must be a finite number above 0"):
        scaled(1)
