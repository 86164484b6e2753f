"""The metrics of `searchsync repair`, on its own registry; the ``projection_*_count`` gauges hold
the confirmed findings of the last rotation per aggregate type."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

_KIND_METRICS: Final = {
    "missing": "projection_missing_count",
    "stale": "projection_stale_count",
    "orphan": "projection_orphan_count",
    "hash_mismatch": "projection_hash_mismatch_count",
    "schema_stale": "projection_schema_stale_count",
    "deleted_flag": "projection_deleted_flag_count",
}


class RepairMetrics:
    def __init__(self) -> None:
        self.registry = r = CollectorRegistry(auto_describe=True)
        labels = ["aggregate_type"]
        self._kinds = {
            kind: Gauge(name, f"Confirmed {kind} findings of the last rotation", labels, registry=r)
            for kind, name in _KIND_METRICS.items()
        }
        self.buckets_scanned = Counter(
            "repair_buckets_scanned",
            "Buckets scanned completely; content=true when their content was hashed",
            [*labels, "content"],
            registry=r,
        )
        self.rotation_seconds = Gauge(
            "repair_rotation_seconds", "Duration of the last rotation", registry=r
        )
        self.finished_at = Gauge(
            "repair_rotation_finished_timestamp_seconds",
            "Unix time the last complete rotation (or --daemon tick) finished: every bucket it "
            "chose and the stray sweep read through, not stopped",
            registry=r,
        )
        self.oldest_age = Gauge(
            "repair_oldest_bucket_age_seconds",
            "Age of the least recently completed bucket",
            labels,
            registry=r,
        )

    def set_counts(self, aggregate_type: str, counts: Mapping[str, int]) -> None:
        for kind, gauge in self._kinds.items():
            gauge.labels(aggregate_type=aggregate_type).set(counts.get(kind, 0))

    def render(self) -> bytes:
        return generate_latest(self.registry)
