"""The live pipeline's metrics (docs/design.md, Metrics) on a registry `Metrics` owns, so
importing registers nothing. Callers use its methods only. The ``*_rate`` and
``es_write_latency_p*`` gauges cover the last N bulk items / requests, NaN while empty.
"""

from __future__ import annotations

import contextlib
from collections import Counter as _Tally
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest

from searchsync.errors import ErrorCode
from searchsync.observability.names import (
    EVENT_RESULTS,
    FAMILIES,
    HISTOGRAM_OPTIONS,
    ITEM_COUNTERS,
    ITEM_KINDS,
    item_kind,
)
from searchsync.observability.rolling import register_rolling

if TYPE_CHECKING:
    from searchsync.search.sink import WriteOutcome

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """The pipeline's metrics on one registry; also a `SinkObserver` (`bulk_done`, `outcomes`)."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry(auto_describe=True)
        self._m: dict[str, Any] = {
            name: kind(name, text, labels.split(), registry=r, **HISTOGRAM_OPTIONS.get(name, {}))
            for name, (kind, text, labels) in FAMILIES.items()
        }
        for result in ("ok", "failed"):
            self._m["searchsync_commits"].labels(result=result)
        # hot-path labelled children, looked up once (labels() takes a lock each call)
        self._children: dict[tuple[str, ...], Any] = {}
        self._item_kinds: dict[tuple[str, ErrorCode | None], str] = {}
        self.items, self.latencies = register_rolling(r)

    def _child(self, name: str, *labels: str) -> Any:
        child = self._children.get((name, *labels))
        if child is None:
            child = self._children[(name, *labels)] = self._m[name].labels(*labels)
        return child

    # --- Elasticsearch ------------------------------------------------------------------------

    def bulk_done(self, actions: int, seconds: float) -> None:
        """One bulk request of `actions` took `seconds` (its items come through `outcomes`)."""
        self._m["es_write_latency_seconds"].observe(seconds)
        self.latencies.add(seconds)

    def observe_item(self, kind: str, n: int = 1) -> None:
        """`n` bulk items ended as `kind` (one of `ITEM_KINDS`)."""
        if kind not in ITEM_KINDS:
            raise ValueError(f"unknown bulk item kind {kind!r}; want one of {ITEM_KINDS}")
        if kind in ITEM_COUNTERS:
            self._m[ITEM_COUNTERS[kind]].inc(n)
        self.items.add(kind, n)

    def tombstone(self, n: int = 1) -> None:
        self._m["es_tombstone_written"].inc(n)

    def outcomes(self, outcomes: Sequence[WriteOutcome]) -> None:
        """One write's outcomes, counted per item kind (one child update per kind, not per op)."""
        for key, n in _Tally((o.kind.value, o.code) for o in outcomes).items():
            kind = self._item_kinds.get(key) or self._item_kinds.setdefault(key, item_kind(*key))
            self.observe_item(kind, n)

    # --- events -------------------------------------------------------------------------------

    def consumed(self, topic: str, n: int = 1) -> None:
        self._child("searchsync_events_consumed", topic).inc(n)

    def event_outcome(self, aggregate_type: str, result: str, n: int = 1) -> None:
        if result not in EVENT_RESULTS:
            raise ValueError(f"unknown event result {result!r}; want one of {EVENT_RESULTS}")
        self._child("searchsync_event_outcomes", aggregate_type, result).inc(n)

    def retry(self, aggregate_type: str, code: str) -> None:
        self._m["outbox_retry"].labels(aggregate_type, code).inc()

    def dead(self, aggregate_type: str, code: str) -> None:
        self._m["outbox_dead"].labels(aggregate_type, code).inc()

    def poison(self, code: str) -> None:
        self._m["searchsync_poison_messages"].labels(code).inc()

    def revision_regression(self, aggregate_type: str) -> None:
        self._m["searchsync_revision_regression"].labels(aggregate_type).inc()

    def connector_task_restarted(self) -> None:
        self._m["searchsync_connector_task_restarts"].inc()

    def commit(self, ok: bool) -> None:
        self._m["searchsync_commits"].labels("ok" if ok else "failed").inc()

    def commit_to_searchable(self, seconds: float) -> None:
        # clocks of broker and host may disagree
        self._m["searchsync_commit_to_searchable_seconds"].observe(max(0.0, seconds))

    # --- gauges -------------------------------------------------------------------------------

    def set_pending(self, n: int) -> None:
        self._m["searchsync_member_pending_events"].set(n)

    def set_processing(self, n: int) -> None:
        self._m["searchsync_member_keys_in_flight"].set(n)

    def set_severe_lag_threshold(self, seconds: float) -> None:
        self._m["searchsync_severe_lag_threshold_seconds"].set(seconds)

    def set_oldest_pending_age(self, seconds: float) -> None:
        self._m["searchsync_member_oldest_pending_age_seconds"].set(seconds)

    def dlq_budget_spent(self) -> None:
        self._m["searchsync_dlq_budget_spent"].set(1)

    def set_lag(self, topic: str, partition: int, lag: int) -> None:
        self._m["searchsync_consumer_lag"].labels(topic, str(partition)).set(lag)

    def forget_partition(self, topic: str, partition: int) -> None:
        """Drop a revoked partition's lag series, so a stale value does not linger."""
        self._set("searchsync_consumer_lag", (topic, str(partition)), None)

    def set_blocked(
        self, topic: str, partition: int, missing: int | None, *, lineage: bool = False
    ) -> None:
        """A partition blocked by a history gap of `missing` records, or by a lineage mismatch
        (`lineage`: how many records were lost is unknown); neither: no longer blocked."""
        labels = (topic, str(partition))
        blocked = 1 if missing is not None or lineage else None
        self._set("searchsync_partition_blocked", labels, blocked)
        self._set("searchsync_partition_gap_records", labels, missing)
        self._set("searchsync_partition_lineage_mismatch", labels, 1 if lineage else None)

    def _set(self, name: str, labels: tuple[str, ...], value: float | None) -> None:
        """Set the series of `labels`, or remove it (None)."""
        if value is not None:
            self._m[name].labels(*labels).set(value)
            return
        with contextlib.suppress(KeyError):
            self._m[name].remove(*labels)

    def set_assigned(self, n: int) -> None:
        self._m["searchsync_partitions_assigned"].set(n)

    def set_paused(self, n: int) -> None:
        self._m["searchsync_partitions_paused"].set(n)

    def set_fenced(self, alias: str, fenced: bool) -> None:
        self._m["searchsync_schema_fenced"].labels(alias).set(1 if fenced else 0)

    def set_alias_physical_index(self, alias: str, version: int) -> None:
        self._m["alias_current_physical_index"].labels(alias).set(version)

    def revision_lag(self, aggregate_type: str, lag: int) -> None:
        self._child("projection_revision_lag", aggregate_type).set(lag)

    def fanout_jobs(self, *, pending: int, done: int) -> None:
        self._m["searchsync_fanout_jobs"].labels("pending").set(pending)
        self._m["searchsync_fanout_jobs"].labels("done").set(done)

    def fanout_appended(self, n: int) -> None:
        self._m["searchsync_fanout_rebuilds"].inc(n)

    def render(self) -> bytes:
        """The text exposition format of every metric (what GET /metrics returns)."""
        return generate_latest(self.registry)
