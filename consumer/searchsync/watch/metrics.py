"""What `searchsync exporter` serves on /metrics (docs/design.md, "Watching the group from
outside"), on its own registry. Seed 000's ``outbox_pending_count`` and
``outbox_oldest_pending_age_seconds`` mean here the broker-side backlog the group has not finished
(the polling relay exports the same names for rows it has not published)."""

from __future__ import annotations

import contextlib
import math
from functools import partial
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.exposition import generate_latest

from searchsync.watch.group import GroupView

EXPORTER_METRIC_NAMES: Final = (
    "searchsync_group_lag",
    "searchsync_group_oldest_unfinished_age_seconds",
    "searchsync_group_members",
    "searchsync_group_expected_members",
    "outbox_pending_count",
    "outbox_oldest_pending_age_seconds",
    "searchsync_canary_age_seconds",
    "searchsync_canary_beats",
    "searchsync_exporter_errors",
)


class ExporterMetrics:
    """The exporter's gauges; `set_group` replaces the group's series with one view. The canary's
    two series exist only with `canary` on (an age of 0 must never stand for "not measured")."""

    def __init__(
        self, expected_members: int, *, canary: bool, registry: CollectorRegistry | None = None
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        gauge = partial(Gauge, registry=self.registry)
        labels = ["topic", "partition"]
        self._lag = gauge(
            "searchsync_group_lag", "Log end minus the group's committed offset", labels
        )
        self._age = gauge(
            "searchsync_group_oldest_unfinished_age_seconds",
            "Age of the message at the group's committed offset (0: nothing unfinished)",
            labels,
        )
        self._members = gauge("searchsync_group_members", "Live members of the group (admin API)")
        expected = gauge(
            "searchsync_group_expected_members",
            "Members the deployment runs (exporter.expected_members)",
        )
        expected.set(expected_members)
        self._pending = gauge(
            "outbox_pending_count",
            "Outbox events published and not yet finished by the group (broker-side backlog)",
        )
        self._oldest = gauge(
            "outbox_oldest_pending_age_seconds",
            "Age of the oldest outbox event the group has not finished",
        )
        r = self.registry
        on = r if canary else CollectorRegistry()
        self._canary = Gauge(
            "searchsync_canary_age_seconds",
            "Now minus the commit time of the newest searchable heartbeat (since start: none yet)",
            registry=on,
        )
        self._beats = Counter(
            "searchsync_canary_beats", "Heartbeats committed through the outbox", registry=on
        )
        self._errors = Counter(
            "searchsync_exporter_errors",
            "Observations that failed, by what was observed",
            ["probe"],
            registry=r,
        )
        for probe in ("group", "canary_beat", "canary_read"):
            self._errors.labels(probe=probe)
        self._series: set[tuple[str, str]] = set()

    def set_group(self, view: GroupView) -> None:
        self._members.set(view.members)
        self._pending.set(view.lag)
        self._oldest.set(view.oldest_age_s)
        now = set()
        for p in view.partitions:
            key = (p.topic, str(p.partition))
            now.add(key)
            self._lag.labels(*key).set(p.lag)
            unread = math.nan if p.lag else 0.0  # events wait, their age unknown: no 0
            self._age.labels(*key).set(unread if p.oldest_age_s is None else p.oldest_age_s)
        for key in self._series - now:  # a topic deleted, or no longer subscribed
            with contextlib.suppress(KeyError):
                self._lag.remove(*key)
                self._age.remove(*key)
        self._series = now

    def canary_beat(self) -> None:
        self._beats.inc()

    def set_canary_age(self, seconds: float) -> None:
        self._canary.set(max(0.0, seconds))

    def error(self, probe: str) -> None:
        self._errors.labels(probe=probe).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
