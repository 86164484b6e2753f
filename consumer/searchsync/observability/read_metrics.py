"""The read side's metrics (`searchsync.read.verified_search`): the hits a verified search found
stale (the row is newer) or gone (deleted or missing), per query type (docs/read-side.md)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter


class ReadMetrics:
    """A private registry unless the application passes its own (its /metrics then shows it)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self._drift = Counter(
            "searchsync_verified_search_drift_hits",
            "Hits of a verified search whose row is newer (stale) or deleted or missing (gone)",
            ["query_type", "state"],
            registry=self.registry,
        )

    def drift(self, query_type: str, *, stale: int, gone: int) -> None:
        """Count one verified search's stale and gone hits."""
        if stale:
            self._drift.labels(query_type, "stale").inc(stale)
        if gone:
            self._drift.labels(query_type, "gone").inc(gone)
