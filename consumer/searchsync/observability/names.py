"""The names and label values of the live pipeline's metrics (docs/design.md, Metrics)."""

from __future__ import annotations

from typing import Final

from searchsync.errors import ErrorCode

ITEM_KINDS: Final = ("success", "429", "5xx", "mapping_error", "version_conflict", "other")
"""What one bulk item can be, for `Metrics.observe_item`."""

EVENT_RESULTS: Final = ("applied", "already_applied", "superseded", "dead_lettered")
"""How an event can finish (docs/design.md, invariant 5), for `Metrics.event_outcome`."""

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
    "searchsync_fanout_rebuilds",
    # histograms
    "es_write_latency_seconds",
    "searchsync_commit_to_searchable_seconds",
    # gauges
    "searchsync_member_pending_events",
    "searchsync_member_keys_in_flight",
    "searchsync_member_oldest_pending_age_seconds",
    "searchsync_dlq_budget_spent",
    "searchsync_severe_lag_threshold_seconds",
    "searchsync_consumer_lag",
    "searchsync_partitions_assigned",
    "searchsync_partitions_paused",
    "searchsync_partition_blocked",
    "searchsync_partition_gap_records",
    "searchsync_schema_fenced",
    "searchsync_fanout_jobs",
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
