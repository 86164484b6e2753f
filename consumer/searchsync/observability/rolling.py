"""Rolling windows over the last N bulk items or requests, for the ``*_rate`` and
``es_write_latency_p*`` gauges."""

from __future__ import annotations

import math
from collections import Counter as _Tally
from collections import deque
from typing import Any, Final

from prometheus_client import CollectorRegistry, Gauge

DEFAULT_WINDOW: Final = 1_000


class RollingKinds:
    """The share of each kind among the last `size` observations, kept as runs of one kind (O(1)
    per `add`, whatever `n`)."""

    def __init__(self, size: int = DEFAULT_WINDOW) -> None:
        if size < 1:
            raise ValueError(f"window size must be >= 1, got {size}")
        self._size = size
        self._runs: deque[list[Any]] = deque()  # [kind, count], oldest first
        self._total = 0
        self._counts: _Tally[str] = _Tally()

    def __len__(self) -> int:
        return self._total

    def add(self, kind: str, n: int = 1) -> None:
        n = min(n, self._size)
        if n <= 0:
            return
        runs = self._runs
        if runs and runs[-1][0] == kind:
            runs[-1][1] += n
        else:
            runs.append([kind, n])
        self._counts[kind] += n
        self._total += n
        excess = self._total - self._size
        while excess > 0:  # drop the oldest observations
            oldest = runs[0]
            cut = min(excess, oldest[1])
            oldest[1] -= cut
            self._counts[oldest[0]] -= cut
            self._total -= cut
            excess -= cut
            if oldest[1] == 0:
                runs.popleft()

    def rate(self, kind: str) -> float:
        """Share of `kind` in the window; NaN while the window is empty."""
        return self._counts[kind] / self._total if self._total else math.nan


class RollingQuantiles:
    """Nearest-rank quantiles of the last `size` values (sorted on read: reads are scrapes)."""

    def __init__(self, size: int = DEFAULT_WINDOW) -> None:
        if size < 1:
            raise ValueError(f"window size must be >= 1, got {size}")
        self._window: deque[float] = deque(maxlen=size)

    def add(self, value: float) -> None:
        self._window.append(value)

    def quantile(self, q: float) -> float:
        """The smallest value with at least ``q`` of the window at or below it; NaN when empty."""
        if not 0.0 < q <= 1.0:
            raise ValueError(f"quantile must be in (0, 1], got {q}")
        ordered = sorted(self._window)
        return ordered[max(1, math.ceil(q * len(ordered))) - 1] if ordered else math.nan


_RATES: Final = (
    ("es_version_conflict_rate", "version_conflict"),
    ("es_bulk_item_success_rate", "success"),
    ("es_bulk_item_429_rate", "429"),
    ("es_mapping_error_rate", "mapping_error"),
)
_QUANTILES: Final = (50, 95, 99)
ROLLING_NAMES: Final = (
    *(name for name, _ in _RATES),
    *(f"es_write_latency_p{q}" for q in _QUANTILES),
)


def register_rolling(registry: CollectorRegistry) -> tuple[RollingKinds, RollingQuantiles]:
    """New windows of bulk items and of request latencies, read by the ``*_rate`` and
    ``es_write_latency_p*`` gauges registered on `registry`."""
    items, latencies = RollingKinds(), RollingQuantiles()
    for name, kind in _RATES:
        help_text = f"Share of {kind} among the last {DEFAULT_WINDOW} bulk items"
        gauge = Gauge(name, help_text, registry=registry)
        gauge.set_function(lambda kind=kind: items.rate(kind))  # type: ignore[misc]
    for q in _QUANTILES:
        gauge = Gauge(
            f"es_write_latency_p{q}",
            f"p{q} bulk latency (seconds) over the last {DEFAULT_WINDOW} requests",
            registry=registry,
        )
        gauge.set_function(lambda q=q: latencies.quantile(q / 100))  # type: ignore[misc]
    return items, latencies
