"""The catalogue of the live pipeline's metrics (docs/design.md, Metrics): each family's name,
type, help and labels, and the label values `Metrics` accepts."""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Gauge, Histogram

from searchsync.errors import ErrorCode
from searchsync.observability.rolling import ROLLING_NAMES

ITEM_KINDS: Final = ("success", "429", "5xx", "mapping_error", "version_conflict", "other")
"""What one bulk item can be, for `Metrics.observe_item`."""

EVENT_RESULTS: Final = ("applied", "already_applied", "superseded", "dead_lettered")
"""How an event can finish (docs/design.md, invariant 5), for `Metrics.event_outcome`."""

# Latency buckets (s): a bulk takes ms to tens of s; commit-to-searchable up to hours (a DLQ replay)
_BULK_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_VISIBLE_BUCKETS: Final = (
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3_600.0, 21_600.0,
)  # fmt: skip
_TP: Final = "topic partition"

# name: (type, help, labels); counters are exported with a _total suffix
FAMILIES: Final[dict[str, tuple[type, str, str]]] = {
    "searchsync_events_consumed": (Counter, "Kafka messages taken in", "topic"),
    "searchsync_event_outcomes": (
        Counter,
        "Events finished, by how they finished",
        "aggregate_type result",
    ),
    "outbox_retry": (Counter, "Events scheduled for another attempt", "aggregate_type code"),
    "outbox_dead": (Counter, "Events written to the DLQ", "aggregate_type code"),
    "es_bulk_item_success": (Counter, "Bulk items written (2xx)", ""),
    "es_bulk_item_429": (Counter, "Bulk items refused with 429", ""),
    "es_mapping_error": (Counter, "Bulk items refused by the mapping", ""),
    "es_version_conflict": (Counter, "Bulk items answered 409 (external version)", ""),
    "es_bulk_item_5xx": (Counter, "Bulk items failed with 5xx", ""),
    "es_tombstone_written": (Counter, "Tombstone documents written", ""),
    "searchsync_revision_regression": (
        Counter,
        "Elasticsearch held a newer revision than the truth",
        "aggregate_type",
    ),
    "searchsync_poison_messages": (
        Counter,
        "Messages that can never succeed as they are",
        "code",
    ),
    "searchsync_commits": (Counter, "Kafka offset commits", "result"),
    "searchsync_connector_task_restarts": (
        Counter,
        "FAILED Kafka Connect tasks the connector watch restarted",
        "",
    ),
    "es_write_latency_seconds": (Histogram, "Bulk request latency", ""),
    "searchsync_commit_to_searchable_seconds": (
        Histogram,
        "From the Kafka message timestamp to the acknowledged Elasticsearch write",
        "",
    ),
    # this member's memory; the group's backlog at the broker is the exporter's
    "searchsync_member_pending_events": (Gauge, "Unfinished events held", ""),
    "searchsync_member_keys_in_flight": (Gauge, "Keys this member is writing", ""),
    "searchsync_member_oldest_pending_age_seconds": (
        Gauge,
        "Age of the oldest unfinished event this member holds",
        "",
    ),
    "searchsync_dlq_budget_spent": (
        Gauge,
        "1 once the DLQ error budget is spent (the member then stops with exit code 3)",
        "",
    ),
    "searchsync_severe_lag_threshold_seconds": (
        Gauge,
        "The severe-lag threshold (observability.severe_lag_s) SearchsyncSevereLag uses",
        "",
    ),
    "searchsync_consumer_lag": (Gauge, "High watermark minus committed offset", _TP),
    "searchsync_partitions_assigned": (Gauge, "Partitions assigned to this consumer", ""),
    "searchsync_partitions_paused": (Gauge, "Partitions paused", ""),
    "searchsync_partition_blocked": (
        Gauge,
        "1 while the partition is not read: its committed offset is below the log start, or its "
        "lineage does not match (searchsync_partition_lineage_mismatch)",
        _TP,
    ),
    "searchsync_partition_lineage_mismatch": (
        Gauge,
        "1 while the partition is blocked because its topic was re-created since the group read "
        "it, or its committed offset is above the log end",
        _TP,
    ),
    "searchsync_partition_gap_records": (
        Gauge,
        "Records deleted before being read: log start minus committed offset",
        _TP,
    ),
    "searchsync_schema_fenced": (
        Gauge,
        "1 while writes to the alias are fenced: its write index holds another schema version",
        "alias",
    ),
    "alias_current_physical_index": (
        Gauge,
        "N of the physical index <alias>_v<N> the alias writes to (as last read)",
        "alias",
    ),
    "projection_revision_lag": (
        Gauge,
        "Newest announced revision minus indexed revision (last observed)",
        "aggregate_type",
    ),
    # the fan-out worker's (docs/design.md, "Fan-out"): jobs by state as last read
    "searchsync_fanout_jobs": (Gauge, "Fan-out jobs by state", "state"),
    "searchsync_fanout_rebuilds": (
        Counter,
        "REBUILD events appended for the dependents of a changed referenced aggregate",
        "",
    ),
}
HISTOGRAM_OPTIONS: Final[dict[str, dict[str, tuple[float, ...]]]] = {
    "es_write_latency_seconds": {"buckets": _BULK_BUCKETS},
    "searchsync_commit_to_searchable_seconds": {"buckets": _VISIBLE_BUCKETS},
}
ITEM_COUNTERS: Final = {
    "success": "es_bulk_item_success",
    "429": "es_bulk_item_429",
    "mapping_error": "es_mapping_error",
    "version_conflict": "es_version_conflict",
    "5xx": "es_bulk_item_5xx",
}

METRIC_NAMES: Final = (*FAMILIES, *ROLLING_NAMES)
"""Every metric family `Metrics` registers (before prometheus-client's suffixes)."""


def item_kind(outcome_kind: str, code: ErrorCode | None) -> str:
    """One of `ITEM_KINDS` for a sink `OutcomeKind` value and its code (FAILED split by code)."""
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
