"""The metrics of the read side (`searchsync.read.verified_search`).

``searchsync_verified_search_drift_hits_total{query_type, state}`` counts the hits a verified
search found stale (``state="stale"``: the row is newer than the document) or gone
(``state="gone"``: the row is deleted or missing), per query type the caller names. It is the
read side's view of drift (docs/read-side.md); the repair's scheduler may use it.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter

__all__ = ["READ_METRIC_NAMES", "ReadMetrics"]

READ_METRIC_NAMES: Final = ("searchsync_verified_search_drift_hits",)


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
