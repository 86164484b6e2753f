"""The ``[fanout]`` section: the fan-out of related aggregates (docs/design.md, "Fan-out")."""

from __future__ import annotations

from dataclasses import dataclass

from searchsync.config._reader import _Section, integer, read_fields, setting


@dataclass(frozen=True, slots=True)
class FanoutSettings:
    """How each member's fan-out worker turns jobs into REBUILD events. `enabled`: run the worker
    (jobs are recorded either way); `appends_per_s`: the member's ceiling; `lease_s`: how long a job
    stays with a worker that stopped renewing it."""

    enabled: bool = setting(True, _Section.boolean)
    appends_per_s: float = 200.0
    page_size: int = setting(500, integer(1, 10_000))
    poll_interval_s: float = 1.0
    lease_s: float = 60.0
    progress_every: int = setting(1_000, integer(1, 100_000_000))


def _fanout(r: _Section) -> FanoutSettings:
    appends = r.number("appends_per_s", 0.0, 1_000_000.0, lo_open=True)
    poll = r.number("poll_interval_s", 0.0, 60.0, lo_open=True)
    lease = r.number("lease_s", 1.0, 86_400.0)
    r.ordered("poll_interval_s", poll, "lease_s", lease, strict=True)
    return read_fields(
        r, FanoutSettings, appends_per_s=appends, poll_interval_s=poll, lease_s=lease
    )
