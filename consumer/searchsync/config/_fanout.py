"""The ``[fanout]`` section: the fan-out of related aggregates (docs/design.md, "Fan-out")."""

from __future__ import annotations

from dataclasses import dataclass

from searchsync.config._reader import _Section


@dataclass(frozen=True, slots=True)
class FanoutSettings:
    """How each consumer member's fan-out worker turns jobs into REBUILD events.

    `enabled`: the member runs the worker (a consumer still records jobs when off, so another
    member, or `searchsync run` elsewhere, does the appends). `appends_per_s` is the ceiling of
    REBUILD appends per member: every one is an event the live consumers process beside the live
    writes, so a higher ceiling renames faster and slows the live writes meanwhile (bench/README.md,
    "Fan-out benchmark"); `page_size` the dependents read and appended per transaction;
    `poll_interval_s` the wait of an idle worker before it looks for jobs again; `lease_s` how long
    a job stays with a worker that stopped renewing it (then another member takes it over, from
    its cursor); `progress_every` the appends between two progress log lines of one job.
    """

    enabled: bool = True
    appends_per_s: float = 200.0
    page_size: int = 500
    poll_interval_s: float = 1.0
    lease_s: float = 60.0
    progress_every: int = 1_000


def _fanout(r: _Section) -> FanoutSettings:
    page = r.integer("page_size", 1, 10_000)
    appends = r.number("appends_per_s", 0.0, 1_000_000.0, lo_open=True)
    poll = r.number("poll_interval_s", 0.0, 60.0, lo_open=True)
    lease = r.number("lease_s", 1.0, 86_400.0)
    r.ordered("poll_interval_s", poll, "lease_s", lease, strict=True)
    return FanoutSettings(
        enabled=r.boolean("enabled"),
        appends_per_s=appends,
        page_size=page,
        poll_interval_s=poll,
        lease_s=lease,
        progress_every=r.integer("progress_every", 1, 100_000_000),
    )
