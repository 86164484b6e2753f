"""Every metric searchsync exports, named in one place (docs/design.md, Metrics).

`Metrics` owns a prometheus-client registry: a new private one unless the caller passes one, so
two consumers (or two tests) in one process never share or clash over the global registry, and
importing this module registers nothing. The pipeline calls plain methods (`observe_bulk`,
`event_outcome`, `set_lag`, ...) and never touches a prometheus object, so the names, labels and
label values live here only.

Counters are exported with prometheus-client's ``_total`` suffix. The ``*_rate`` and
``es_write_latency_p*`` gauges are computed in-process over the last N bulk items / requests
(`RollingKinds`, `RollingQuantiles`) for dashboards that have no PromQL; they are evaluated when
scraped and read NaN while their window is empty (no data is not the same as a 0 % error rate).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

from searchsync.errors import ErrorCode
from searchsync.observability.rolling import DEFAULT_WINDOW, RollingKinds, RollingQuantiles

if TYPE_CHECKING:
    from searchsync.search.sink import WriteOutcome

__all__ = [
    "CONTENT_TYPE",
    "EVENT_RESULTS",
    "ITEM_KINDS",
    "METRIC_NAMES",
    "Metrics",
    "RollingKinds",
    "RollingQuantiles",
    "item_kind",
]

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
"""What /metrics answers with: `generate_latest` writes the classic 0.0.4 text format (names
are plain ASCII here), which every Prometheus version scrapes."""

ITEM_KINDS: Final = ("success", "429", "5xx", "mapping_error", "version_conflict", "other")
"""What one bulk item can be, for `Metrics.observe_item`."""

EVENT_RESULTS: Final = ("applied", "already_applied", "superseded", "dead_lettered")
"""How an event can finish (docs/design.md, invariant 5), for `Metrics.event_outcome`."""


# Latency buckets (seconds): a bulk takes milliseconds to tens of seconds; commit-to-searchable
# spans from sub-second (healthy) to hours (a replayed DLQ).
_BULK_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_VISIBLE_BUCKETS: Final = (
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    300.0,
    900.0,
    3_600.0,
    21_600.0,
)

METRIC_NAMES: Final = (
    # counters (exported with a _total suffix)
    "searchsync_events_consumed",
    "searchsync_event_outcomes",
    "outbox_retry",
    "outbox_dead",
    "es_bulk_item_success",
    "es_bulk_item_429",
    "es_mapping_error",
    "es_version_conflict",
    "es_bulk_item_5xx",
    "es_tombstone_written",
    "searchsync_revision_regression",
    "searchsync_poison_messages",
    "searchsync_commits",
    "searchsync_connector_task_restarts",
    # histograms
    "es_write_latency_seconds",
    "searchsync_commit_to_searchable_seconds",
    # gauges
    "outbox_pending_count",
    "outbox_processing_count",
    "outbox_oldest_pending_age_seconds",
    "searchsync_severe_lag_threshold_seconds",
    "searchsync_consumer_lag",
    "searchsync_partitions_assigned",
    "searchsync_partitions_paused",
    "searchsync_schema_fenced",
    "alias_current_physical_index",
    "projection_revision_lag",
    "es_version_conflict_rate",
    "es_bulk_item_success_rate",
    "es_bulk_item_429_rate",
    "es_mapping_error_rate",
    "es_write_latency_p50",
    "es_write_latency_p95",
    "es_write_latency_p99",
)
"""Every metric family `Metrics` registers (before prometheus-client's suffixes)."""


class Metrics:
    """The pipeline's metrics, registered on one registry; methods are the only way in.

    Also implements `searchsync.search.sink.SinkObserver` (`bulk_done`, `outcome`), so a `Sink`
    can report bulk latency and per-item results directly.
    """

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        item_window: int = DEFAULT_WINDOW,
        latency_window: int = DEFAULT_WINDOW,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.items = RollingKinds(item_window)
        self.latencies = RollingQuantiles(latency_window)
        # labelled children of the hot-path metrics, looked up once (labels() costs a lock and
        # a tuple of label values each call)
        self._children: dict[tuple[str, ...], Any] = {}
        self._item_kinds: dict[tuple[str, ErrorCode | None], str] = {}

        self._consumed = Counter(
            "searchsync_events_consumed", "Kafka messages taken in", ["topic"], registry=r
        )
        self._outcomes = Counter(
            "searchsync_event_outcomes",
            "Events finished, by how they finished",
            ["aggregate_type", "result"],
            registry=r,
        )
        self._retry = Counter(
            "outbox_retry",
            "Events scheduled for another attempt",
            ["aggregate_type", "code"],
            registry=r,
        )
        self._dead = Counter(
            "outbox_dead", "Events written to the DLQ", ["aggregate_type", "code"], registry=r
        )
        self._item_counters = {
            "success": Counter("es_bulk_item_success", "Bulk items written (2xx)", registry=r),
            "429": Counter("es_bulk_item_429", "Bulk items refused with 429", registry=r),
            "mapping_error": Counter(
                "es_mapping_error", "Bulk items refused by the mapping", registry=r
            ),
            "version_conflict": Counter(
                "es_version_conflict", "Bulk items answered 409 (external version)", registry=r
            ),
            "5xx": Counter("es_bulk_item_5xx", "Bulk items failed with 5xx", registry=r),
        }
        self._tombstones = Counter(
            "es_tombstone_written", "Tombstone documents written", registry=r
        )
        self._regressions = Counter(
            "searchsync_revision_regression",
            "Elasticsearch held a newer revision than the truth",
            ["aggregate_type"],
            registry=r,
        )
        self._poison = Counter(
            "searchsync_poison_messages",
            "Messages that can never succeed as they are",
            ["code"],
            registry=r,
        )
        self._commits = Counter(
            "searchsync_commits", "Kafka offset commits", ["result"], registry=r
        )
        for result in ("ok", "failed"):
            self._commits.labels(result=result)
        self._task_restarts = Counter(
            "searchsync_connector_task_restarts",
            "FAILED Kafka Connect tasks the connector watch restarted",
            registry=r,
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

        self._severe_lag = Gauge(
            "searchsync_severe_lag_threshold_seconds",
            "The severe-lag threshold (observability.severe_lag_s) SearchsyncSevereLag uses",
            registry=r,
        )
        self._pending = Gauge(
            "outbox_pending_count", "Unfinished events held by the consumer", registry=r
        )
        self._processing = Gauge("outbox_processing_count", "Keys in flight", registry=r)
        self._oldest = Gauge(
            "outbox_oldest_pending_age_seconds", "Age of the oldest unfinished event", registry=r
        )
        self._lag = Gauge(
            "searchsync_consumer_lag",
            "High watermark minus committed offset",
            ["topic", "partition"],
            registry=r,
        )
        self._assigned = Gauge(
            "searchsync_partitions_assigned", "Partitions assigned to this consumer", registry=r
        )
        self._paused = Gauge("searchsync_partitions_paused", "Partitions paused", registry=r)
        self._fenced = Gauge(
            "searchsync_schema_fenced",
            "1 while writes to the alias are fenced: its write index holds another schema version",
            ["alias"],
            registry=r,
        )
        self._physical = Gauge(
            "alias_current_physical_index",
            "N of the physical index <alias>_v<N> the alias writes to (as last read)",
            ["alias"],
            registry=r,
        )
        self._revision_lag = Gauge(
            "projection_revision_lag",
            "Newest announced revision minus indexed revision (last observed)",
            ["aggregate_type"],
            registry=r,
        )

        rates = (
            ("es_version_conflict_rate", "version_conflict"),
            ("es_bulk_item_success_rate", "success"),
            ("es_bulk_item_429_rate", "429"),
            ("es_mapping_error_rate", "mapping_error"),
        )
        for name, kind in rates:
            gauge = Gauge(
                name, f"Share of {kind} among the last {item_window} bulk items", registry=r
            )
            gauge.set_function(lambda kind=kind: self.items.rate(kind))  # type: ignore[misc]
        for q in (50, 95, 99):
            gauge = Gauge(
                f"es_write_latency_p{q}",
                f"p{q} bulk latency (seconds) over the last {latency_window} requests",
                registry=r,
            )
            gauge.set_function(lambda q=q: self.latencies.quantile(q / 100))  # type: ignore[misc]

    # --- Elasticsearch ------------------------------------------------------------------------

    def observe_bulk(self, items: int, seconds: float) -> None:
        """One bulk request of `items` actions took `seconds`."""
        del items  # the per-item verdicts come through observe_item
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

    # SinkObserver
    def bulk_done(self, actions: int, seconds: float) -> None:
        self.observe_bulk(actions, seconds)

    def outcome(self, outcome: WriteOutcome) -> None:
        key = (outcome.kind.value, outcome.code)
        kind = self._item_kinds.get(key)
        if kind is None:
            kind = self._item_kinds[key] = item_kind(outcome.kind.value, outcome.code)
        self.observe_item(kind)

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

    def set_lag(self, topic: str, partition: int, lag: int) -> None:
        self._lag.labels(topic=topic, partition=str(partition)).set(lag)

    def forget_partition(self, topic: str, partition: int) -> None:
        """Drop a revoked partition's lag series, so a stale value does not linger."""
        with contextlib.suppress(KeyError):
            self._lag.remove(topic, str(partition))

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


def item_kind(outcome_kind: str, code: ErrorCode | None) -> str:
    """Map a sink `OutcomeKind` value and error code to one of `ITEM_KINDS`.

    ALREADY_APPLIED and AHEAD come from 409s; FAILED is split by its code.
    """
    if outcome_kind == "APPLIED":
        return "success"
    if outcome_kind in ("ALREADY_APPLIED", "AHEAD") or code is ErrorCode.ES_409:
        return "version_conflict"
    return "other" if code is None else _ITEM_KIND_OF_CODE.get(code, "other")


_ITEM_KIND_OF_CODE: Final = {
    ErrorCode.ES_429: "429",
    ErrorCode.ES_5XX: "5xx",
    ErrorCode.MAPPING_ERROR: "mapping_error",
}
