"""The relay's metrics, with seed 000's names and meanings, on its own registry: the outbox gauges
(read every ``relay.stats_interval_s``), the share of failed attempts among the last publishes,
claims taken back and rows published (counters, exported with a ``_total`` suffix)."""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from searchsync.observability.rolling import DEFAULT_WINDOW, RollingKinds
from searchsync.relay.port import OutboxCounts

RELAY_METRIC_NAMES: Final = (
    "outbox_pending_count",
    "outbox_oldest_pending_age_seconds",
    "outbox_processing_count",
    "outbox_retry_rate",
    "outbox_dead_count",
    "outbox_claim_timeout_count",
    "relay_published",
)


class RelayMetrics:
    def __init__(
        self, registry: CollectorRegistry | None = None, *, window: int = DEFAULT_WINDOW
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.attempts = RollingKinds(window)
        self._pending = Gauge("outbox_pending_count", "Outbox rows PENDING", registry=r)
        self._oldest = Gauge(
            "outbox_oldest_pending_age_seconds",
            "Age of the oldest PENDING outbox row since it was created",
            registry=r,
        )
        self._processing = Gauge(
            "outbox_processing_count", "Outbox rows claimed by a relay", registry=r
        )
        self._dead = Gauge("outbox_dead_count", "Outbox rows past the attempt limit", registry=r)
        retry = Gauge(
            "outbox_retry_rate",
            f"Share of failed attempts among this relay's last {window} publish attempts",
            registry=r,
        )
        retry.set_function(lambda: self.attempts.rate("failed"))
        self._timeouts = Counter(
            "outbox_claim_timeout_count",
            "Claims taken back because their holder did not finish in time",
            registry=r,
        )
        self._published = Counter("relay_published", "Outbox rows published", registry=r)

    def set_counts(self, counts: OutboxCounts) -> None:
        self._pending.set(counts.pending)
        self._processing.set(counts.processing)
        self._dead.set(counts.dead)
        self._oldest.set(counts.oldest_pending_age_s or 0.0)

    def attempted(self, published: int, failed: int) -> None:
        self.attempts.add("published", published)
        self.attempts.add("failed", failed)
        self._published.inc(published)

    def taken_back(self, n: int) -> None:
        self._timeouts.inc(n)

    def render(self) -> bytes:
        return generate_latest(self.registry)
