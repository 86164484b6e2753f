"""The metrics of a rebuild, named as the contract names them: a registry of its own, served on its
own port while the rebuild runs (docs/design.md, Metrics). Counters carry the ``_total`` suffix."""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

_COUNTERS: Final = {
    "reindex_scanned": "Rows read by the backfill",
    "reindex_indexed": "Documents the backfill wrote (or found written)",
    "reindex_failed": "Rows the backfill could not index",
}
_GAUGES: Final = {
    "reindex_incremental_lag": "Events after the watermark the catch-up group has not finished",
    "alias_current_physical_index": "N of the physical index <alias>_v<N> the alias writes to",
    "v1_v2_query_diff_rate": (
        "Share of sample queries whose top-k ids differ between the old and the new index"
    ),
}
REBUILD_METRIC_NAMES: Final = (*_COUNTERS, *_GAUGES)
"""Every metric family `RebuildMetrics` registers (before prometheus-client's suffixes)."""


class RebuildMetrics:
    """The rebuild's metrics on one registry, labelled by alias; methods are the only way in."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry(auto_describe=True)
        self._counters = {n: Counter(n, h, ["alias"], registry=r) for n, h in _COUNTERS.items()}
        self._gauges = {n: Gauge(n, h, ["alias"], registry=r) for n, h in _GAUGES.items()}

    def chunk(self, alias: str, *, scanned: int, indexed: int, failed: int) -> None:
        """A backfill chunk: rows read, documents written (or found written), rows not indexed."""
        for name, n in (("scanned", scanned), ("indexed", indexed), ("failed", failed)):
            self._counters[f"reindex_{name}"].labels(alias=alias).inc(n)

    def set(self, name: str, alias: str, value: float) -> None:
        self._gauges[name].labels(alias=alias).set(value)

    def render(self) -> bytes:
        return generate_latest(self.registry)
