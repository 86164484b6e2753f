"""The ``[fanout]`` section: the fan-out of related aggregates (docs/design.md, "Fan-out")."""

from __future__ import annotations

from dataclasses import dataclass

from searchsync.config._reader import _Section, integer, number, setting


@dataclass(frozen=True, slots=True)
class FanoutSettings:
    """How each member's fan-out worker turns jobs into REBUILD events. `enabled`: run the worker
    (jobs are recorded either way); `appends_per_s`: the member's ceiling; `lease_s`: how long a job
    stays with a worker that stopped renewing it."""

    enabled: bool = setting(True, _Section.boolean)
    appends_per_s: float = setting(200.0, number(0.0, 1_000_000.0, lo_open=True))
    page_size: int = setting(500, integer(1, 10_000))
    poll_interval_s: float = setting(1.0, number(0.0, 60.0, lo_open=True))
    lease_s: float = setting(60.0, number(1.0, 86_400.0), above="poll_interval_s", strict=True)
    progress_every: int = setting(1_000, integer(1, 100_000_000))
