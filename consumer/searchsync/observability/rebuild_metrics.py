"""The metrics of a rebuild (`searchsync rebuild`), named as the contract names them.

A rebuild is its own process: it gets its own registry, served on its own port while it runs
(docs/design.md, Metrics). Counters carry prometheus-client's ``_total`` suffix.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

__all__ = ["REBUILD_METRIC_NAMES", "RebuildMetrics"]

REBUILD_METRIC_NAMES: Final = (
    "reindex_scanned",
    "reindex_indexed",
    "reindex_failed",
    "reindex_incremental_lag",
    "alias_current_physical_index",
    "v1_v2_query_diff_rate",
)
"""Every metric family `RebuildMetrics` registers (before prometheus-client's suffixes)."""


class RebuildMetrics:
    """The rebuild's metrics on one registry; methods are the only way in."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        labels = ["alias"]
        self._scanned = Counter("reindex_scanned", "Rows read by the backfill", labels, registry=r)
        self._indexed = Counter(
            "reindex_indexed", "Documents the backfill wrote (or found written)", labels, registry=r
        )
        self._failed = Counter(
            "reindex_failed", "Rows the backfill could not index", labels, registry=r
        )
        self._lag = Gauge(
            "reindex_incremental_lag",
            "Events after the watermark the catch-up group has not finished",
            labels,
            registry=r,
        )
        self._physical = Gauge(
            "alias_current_physical_index",
            "N of the physical index <alias>_v<N> the alias writes to",
            labels,
            registry=r,
        )
        self._diff = Gauge(
            "v1_v2_query_diff_rate",
            "Share of sample queries whose top-k ids differ between the old and the new index",
            labels,
            registry=r,
        )

    def scanned(self, alias: str, n: int) -> None:
        self._scanned.labels(alias=alias).inc(n)

    def indexed(self, alias: str, n: int) -> None:
        self._indexed.labels(alias=alias).inc(n)

    def failed(self, alias: str, n: int) -> None:
        self._failed.labels(alias=alias).inc(n)

    def set_incremental_lag(self, alias: str, lag: int) -> None:
        self._lag.labels(alias=alias).set(lag)

    def set_alias_physical_index(self, alias: str, version: int) -> None:
        self._physical.labels(alias=alias).set(version)

    def set_query_diff_rate(self, alias: str, rate: float) -> None:
        self._diff.labels(alias=alias).set(rate)

    def render(self) -> bytes:
        """The text exposition format of every metric."""
        return generate_latest(self.registry)
