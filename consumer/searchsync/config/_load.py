"""`searchsync index load`'s section: the live-lag guard and the wait for the live group. Its
chunks follow the rebuild's backfill (``[rebuild] chunk_*``)."""

from __future__ import annotations

from dataclasses import dataclass

from searchsync.config._reader import integer, number, setting


@dataclass(frozen=True, slots=True)
class LoadSettings:
    """`max_live_lag`: the live group's lag above which the load waits before its next chunk (at
    most `lag_wait_timeout_s`, then it stops, resumable; 0: no guard), polling every `lag_poll_s`;
    `live_wait_timeout_s`: how long a part, once scanned, waits for the live group to pass its
    watermark; `progress_interval_s`: a progress line this often when stderr is no terminal."""

    max_live_lag: int = setting(10_000, integer(0, 10**12))
    lag_wait_timeout_s: float = setting(600.0, number(0.0, 7 * 86_400.0))
    lag_poll_s: float = setting(5.0, number(0.0, 3_600.0, lo_open=True))
    live_wait_timeout_s: float = setting(600.0, number(0.0, 7 * 86_400.0, lo_open=True))
    poll_interval_s: float = setting(0.5, number(0.0, 60.0, lo_open=True))
    progress_interval_s: float = setting(5.0, number(0.0, 3_600.0, lo_open=True))
