"""The fan-out's metrics (docs/design.md, "Fan-out"), on the consumer's registry: the jobs by
state as last read, and the REBUILD events this member appended."""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge

FANOUT_FAMILIES: Final = ("searchsync_fanout_jobs", "searchsync_fanout_rebuilds")


class FanoutMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self._jobs = Gauge(
            "searchsync_fanout_jobs", "Fan-out jobs by state", ["state"], registry=registry
        )
        self._rebuilds = Counter(
            "searchsync_fanout_rebuilds",
            "REBUILD events appended for the dependents of a changed referenced aggregate",
            registry=registry,
        )

    def jobs(self, *, pending: int, done: int) -> None:
        self._jobs.labels(state="pending").set(pending)
        self._jobs.labels(state="done").set(done)

    def appended(self, n: int) -> None:
        self._rebuilds.inc(n)
