"""The live pipeline's metrics (docs/design.md, Metrics) on a registry `Metrics` owns (private
unless given), so importing registers nothing. Callers use its methods only. The ``*_rate`` and
``es_write_latency_p*`` gauges cover the last N bulk items / requests, NaN while empty.
"""

from __future__ import annotations

import contextlib
import functools
from collections import Counter as _Tally
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

from searchsync.errors import ErrorCode
from searchsync.observability.fanout_metrics import FanoutMetrics
from searchsync.observability.names import EVENT_RESULTS, ITEM_KINDS, item_kind
from searchsync.observability.rolling import (
    DEFAULT_WINDOW,
    RollingKinds,
    RollingQuantiles,
    register_rolling,
)

if TYPE_CHECKING:
    from searchsync.search.sink import WriteOutcome

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"

# Latency buckets (s): a bulk takes ms to tens of s; commit-to-searchable up to hours (a DLQ replay)
_BULK_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_VISIBLE_BUCKETS: Final = (
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3_600.0, 21_600.0,
)  # fmt: skip


class Metrics:
    """The pipeline's metrics on one registry; also a `SinkObserver` (`bulk_done`, `outcomes`)."""

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        item_window: int = DEFAULT_WINDOW,
        latency_window: int = DEFAULT_WINDOW,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        counter = functools.partial(Counter, registry=r)
        gauge_ = functools.partial(Gauge, registry=r)
        self.items = RollingKinds(item_window)
        self.latencies = RollingQuantiles(latency_window)
        # hot-path labelled children, looked up once (labels() takes a lock each call)
        self._children: dict[tuple[str, ...], Any] = {}
        self._item_kinds: dict[tuple[str, ErrorCode | None], str] = {}

        self._consumed = counter("searchsync_events_consumed", "Kafka messages taken in", ["topic"])
        self._outcomes = counter(
            "searchsync_event_outcomes",
            "Events finished, by how they finished",
            ["aggregate_type", "result"],
        )
        self._retry = counter(
            "outbox_retry", "Events scheduled for another attempt", ["aggregate_type", "code"]
        )
        self._dead = counter("outbox_dead", "Events written to the DLQ", ["aggregate_type", "code"])
        self._item_counters = {
            "success": counter("es_bulk_item_success", "Bulk items written (2xx)"),
            "429": counter("es_bulk_item_429", "Bulk items refused with 429"),
            "mapping_error": counter("es_mapping_error", "Bulk items refused by the mapping"),
            "version_conflict": counter(
                "es_version_conflict", "Bulk items answered 409 (external version)"
            ),
            "5xx": counter("es_bulk_item_5xx", "Bulk items failed with 5xx"),
        }
        self._tombstones = counter("es_tombstone_written", "Tombstone documents written")
        self._regressions = counter(
            "searchsync_revision_regression",
            "Elasticsearch held a newer revision than the truth",
            ["aggregate_type"],
        )
        self._poison = counter(
            "searchsync_poison_messages", "Messages that can never succeed as they are", ["code"]
        )
        self._commits = counter("searchsync_commits", "Kafka offset commits", ["result"])
        for result in ("ok", "failed"):
            self._commits.labels(result=result)
        self._task_restarts = counter(
            "searchsync_connector_task_restarts",
            "FAILED Kafka Connect tasks the connector watch restarted",
        )

        self._bulk_latency = Histogram(
            "es_write_latency_seconds", "Bulk request latency", buckets=_BULK_BUCKETS, registry=r
        )
        self._visible = Histogram(
            "searchsync_commit_to_searchable_seconds",
            "From the Kafka message timestamp to the acknowledged Elasticsearch write",
            buckets=_VISIBLE_BUCKETS,
            registry=r,
        )

        self._severe_lag = gauge_(
            "searchsync_severe_lag_threshold_seconds",
            "The severe-lag threshold (observability.severe_lag_s) SearchsyncSevereLag uses",
        )
        # this member's memory; the group's backlog at the broker is the exporter's
        self._pending = gauge_("searchsync_member_pending_events", "Unfinished events held")
        self._processing = gauge_("searchsync_member_keys_in_flight", "Keys this member is writing")
        self._oldest = gauge_(
            "searchsync_member_oldest_pending_age_seconds",
            "Age of the oldest unfinished event this member holds",
        )
        self._budget_spent = gauge_(
            "searchsync_dlq_budget_spent",
            "1 once the DLQ error budget is spent (the member then stops with exit code 3)",
        )
        self._lag = gauge_(
            "searchsync_consumer_lag",
            "High watermark minus committed offset",
            ["topic", "partition"],
        )
        self._assigned = gauge_(
            "searchsync_partitions_assigned", "Partitions assigned to this consumer"
        )
        self._paused = gauge_("searchsync_partitions_paused", "Partitions paused")
        self._blocked = gauge_(
            "searchsync_partition_blocked",
            "1 while the partition is not read: its committed offset is below the log start",
            ["topic", "partition"],
        )
        self._gap = gauge_(
            "searchsync_partition_gap_records",
            "Records deleted before being read: log start minus committed offset",
            ["topic", "partition"],
        )
        self._fenced = gauge_(
            "searchsync_schema_fenced",
            "1 while writes to the alias are fenced: its write index holds another schema version",
            ["alias"],
        )
        self._physical = gauge_(
            "alias_current_physical_index",
            "N of the physical index <alias>_v<N> the alias writes to (as last read)",
            ["alias"],
        )
        self._revision_lag = gauge_(
            "projection_revision_lag",
            "Newest announced revision minus indexed revision (last observed)",
            ["aggregate_type"],
        )

        register_rolling(r, self.items, self.latencies, (item_window, latency_window))
        self.fanout = FanoutMetrics(r)  # the fan-out worker's (searchsync.ops.fanout)

    # --- Elasticsearch ------------------------------------------------------------------------

    def bulk_done(self, actions: int, seconds: float) -> None:
        """One bulk request of `actions` took `seconds` (its items come through `outcomes`)."""
        self._bulk_latency.observe(seconds)
        self.latencies.add(seconds)

    def observe_item(self, kind: str, n: int = 1) -> None:
        """`n` bulk items ended as `kind` (one of `ITEM_KINDS`)."""
        if kind not in ITEM_KINDS:
            raise ValueError(f"unknown bulk item kind {kind!r}; want one of {ITEM_KINDS}")
        counter = self._item_counters.get(kind)
        if counter is not None:
            counter.inc(n)
        self.items.add(kind, n)

    def tombstone(self, n: int = 1) -> None:
        self._tombstones.inc(n)

    def outcomes(self, outcomes: Sequence[WriteOutcome]) -> None:
        """One write's outcomes, counted per item kind (one child update per kind, not per op)."""
        for key, n in _Tally((o.kind.value, o.code) for o in outcomes).items():
            kind = self._item_kinds.get(key) or self._item_kinds.setdefault(key, item_kind(*key))
            self.observe_item(kind, n)

    # --- events -------------------------------------------------------------------------------

    def consumed(self, topic: str, n: int = 1) -> None:
        child = self._children.get(("consumed", topic))
        if child is None:
            child = self._children[("consumed", topic)] = self._consumed.labels(topic=topic)
        child.inc(n)

    def event_outcome(self, aggregate_type: str, result: str, n: int = 1) -> None:
        key = ("outcome", aggregate_type, result)
        child = self._children.get(key)
        if child is None:
            if result not in EVENT_RESULTS:
                raise ValueError(f"unknown event result {result!r}; want one of {EVENT_RESULTS}")
            child = self._outcomes.labels(aggregate_type=aggregate_type, result=result)
            self._children[key] = child
        child.inc(n)

    def retry(self, aggregate_type: str, code: str) -> None:
        self._retry.labels(aggregate_type=aggregate_type, code=code).inc()

    def dead(self, aggregate_type: str, code: str) -> None:
        self._dead.labels(aggregate_type=aggregate_type, code=code).inc()

    def poison(self, code: str) -> None:
        self._poison.labels(code=code).inc()

    def revision_regression(self, aggregate_type: str) -> None:
        self._regressions.labels(aggregate_type=aggregate_type).inc()

    def connector_task_restarted(self) -> None:
        self._task_restarts.inc()

    def commit(self, ok: bool) -> None:
        self._commits.labels(result="ok" if ok else "failed").inc()

    def commit_to_searchable(self, seconds: float) -> None:
        self._visible.observe(max(0.0, seconds))  # clocks of broker and host may disagree

    # --- gauges -------------------------------------------------------------------------------

    def set_pending(self, n: int) -> None:
        self._pending.set(n)

    def set_processing(self, n: int) -> None:
        self._processing.set(n)

    def set_severe_lag_threshold(self, seconds: float) -> None:
        self._severe_lag.set(seconds)

    def set_oldest_pending_age(self, seconds: float) -> None:
        self._oldest.set(seconds)

    def dlq_budget_spent(self) -> None:
        self._budget_spent.set(1)

    def set_lag(self, topic: str, partition: int, lag: int) -> None:
        self._lag.labels(topic=topic, partition=str(partition)).set(lag)

    def forget_partition(self, topic: str, partition: int) -> None:
        """Drop a revoked partition's lag series, so a stale value does not linger."""
        with contextlib.suppress(KeyError):
            self._lag.remove(topic, str(partition))

    def set_blocked(self, topic: str, partition: int, missing: int | None) -> None:
        """A partition blocked by a history gap of `missing` records (None: no longer)."""
        labels = (topic, str(partition))
        if missing is None:
            for gauge in (self._blocked, self._gap):
                with contextlib.suppress(KeyError):
                    gauge.remove(*labels)
            return
        self._blocked.labels(*labels).set(1)
        self._gap.labels(*labels).set(missing)

    def set_assigned(self, n: int) -> None:
        self._assigned.set(n)

    def set_paused(self, n: int) -> None:
        self._paused.set(n)

    def set_fenced(self, alias: str, fenced: bool) -> None:
        self._fenced.labels(alias=alias).set(1 if fenced else 0)

    def set_alias_physical_index(self, alias: str, version: int) -> None:
        self._physical.labels(alias=alias).set(version)

    def revision_lag(self, aggregate_type: str, lag: int) -> None:
        key = ("revision_lag", aggregate_type)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._revision_lag.labels(aggregate_type=aggregate_type)
        child.set(lag)

    # --- exposition ---------------------------------------------------------------------------

    def render(self) -> bytes:
        """The text exposition format of every metric (what GET /metrics returns)."""
        return generate_latest(self.registry)
