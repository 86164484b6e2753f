"""bench/recovery_load.recovery: the recovery point read off commit and searchable times."""

from __future__ import annotations

import math

from bench.recovery_load import recovery


def test_the_lag_is_back_when_the_last_late_page_is_found() -> None:
    committed = {"a": 100.0, "b": 101.0, "c": 115.0, "d": 116.0}
    seen = {"a": 112.5, "b": 112.6, "c": 115.8, "d": 116.9}  # a, b lagged 12.5 and 11.6 s
    r = recovery(committed, seen, fault_at=100.0, up_at=105.0, until=120.0, threshold_s=2.0)
    assert r.seconds == 112.6 - 105.0
    assert r.from_fault_s == 112.6 - 100.0
    assert r.peak_lag_s == 12.5
    assert (r.pages, r.unseen) == (4, 0)


def test_no_page_over_the_threshold_is_recovered_at_once() -> None:
    committed = {"a": 100.0, "b": 101.0}
    seen = {"a": 100.9, "b": 101.5}
    r = recovery(committed, seen, fault_at=100.0, up_at=100.5, until=110.0, threshold_s=2.0)
    assert (r.seconds, r.from_fault_s) == (0.0, 0.0)


def test_pages_outside_the_window_do_not_count() -> None:
    committed = {"old": 50.0, "a": 100.0, "late": 130.0}
    seen = {"old": 99.0, "a": 100.5, "late": 200.0}  # old lagged before, late after the window
    r = recovery(committed, seen, fault_at=100.0, up_at=101.0, until=120.0, threshold_s=2.0)
    assert (r.seconds, r.pages) == (0.0, 1)


def test_a_page_never_found_leaves_the_recovery_unknown() -> None:
    committed = {"a": 100.0, "b": 104.0}
    seen = {"a": 100.5}
    r = recovery(committed, seen, fault_at=100.0, up_at=101.0, until=120.0, threshold_s=2.0)
    assert math.isnan(r.seconds)
    assert r.unseen == 1
    assert r.peak_lag_s == 120.0 - 104.0
