"""The polling relay: claim outbox rows, publish them as the Outbox Event Router would, mark them;
`run_relay` runs one over the outbox table and a producer until stopped.
Delivery is at least once (a crash after publishing re-publishes once the claim is taken back);
the consumer's external versions make a duplicate harmless (docs/relay.md)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import random
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Final, Protocol

from confluent_kafka import KafkaError, KafkaException
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from searchsync.config import RelaySettings, Settings
from searchsync.errors import DeliveryFailed, TransientError
from searchsync.kafka.producer import AcknowledgedProducer, ProducerFactory
from searchsync.observability.http import serve_job_metrics
from searchsync.observability.rolling import DEFAULT_WINDOW, RollingKinds
from searchsync.relay.port import (
    PARTITIONER,
    Failure,
    OutboxCounts,
    OutboxEntry,
    RelayStore,
    router_record,
)
from searchsync.stream.retry import RetryPolicy

log = logging.getLogger(__name__)


def seed_retry(max_attempts: int, rng: random.Random | None = None) -> RetryPolicy:
    """``NextRetry`` (docs/design.md, "Retry": base 1 s, shift ``min(attempt, 10)``, cap 30 min,
    jitter in ``[0, max(delay / 5, 1 ms))``), with the relay's attempt limit."""
    return RetryPolicy(1.0, 1_800.0, max_attempts, 0.2, rng or random.Random())


def retry_delay(retry: RetryPolicy, attempts: int) -> timedelta:
    """``NextRetry(attempts + 1)`` (attempts below 0 count as 0) in whole microseconds
    (DATETIME(6)), strictly below the jitter bound (a float sum can round up onto it)."""
    n = max(attempts, 0) + 1
    limit = retry.jitter_limit(n)
    bound = math.ceil((retry.nominal(n) + limit) * 1_000_000) - (1 if limit else 0)
    return timedelta(microseconds=min(int(retry.delay(n) * 1_000_000), bound))


class Publisher(Protocol):
    """Produce one record and return once Kafka acknowledged it
    (`searchsync.kafka.producer.AcknowledgedProducer`)."""

    async def send(
        self, topic: str, value: bytes, key: bytes | None, *, headers: list[tuple[str, bytes]]
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class TickReport:
    taken_back: int = 0
    claimed: int = 0
    published: int = 0
    failed: int = 0  # the rows' own failures (attempts)
    dead: int = 0
    unavailable: int = 0  # rows given back because Kafka did not take them


# Kafka errors about the record itself; any other (timeouts, transport, leaders, authorization)
# is Kafka's or the deployment's, and the same record may pass later.
_RECORD_ERRORS: Final = frozenset(
    {
        KafkaError.INVALID_MSG,
        KafkaError.INVALID_MSG_SIZE,
        KafkaError.MSG_SIZE_TOO_LARGE,
        KafkaError.TOPIC_EXCEPTION,  # a topic name Kafka refuses (the row's aggregate_type)
        KafkaError.RECORD_LIST_TOO_LARGE,
        KafkaError.INVALID_RECORD,
        KafkaError._BAD_MSG,
        KafkaError._INVALID_ARG,
    }
)


def row_fault(exc: BaseException) -> bool:
    """True when `exc` is the record's own failure, not Kafka's: the router cannot make a record
    of the row (ValueError), or Kafka refused the record itself (by error code)."""
    if isinstance(exc, ValueError):
        return True
    error = exc.error if isinstance(exc, DeliveryFailed) else None
    if isinstance(exc, KafkaException) and exc.args:
        error = exc.args[0]
    code = getattr(error, "code", None)
    return callable(code) and code() in _RECORD_ERRORS


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
    """The relay's metrics (names and meanings: docs/relay.md), on a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        gauge = partial(Gauge, registry=self.registry)
        counter = partial(Counter, registry=self.registry)
        self.attempts = RollingKinds(DEFAULT_WINDOW)
        self._pending = gauge("outbox_pending_count", "Outbox rows PENDING")
        self._oldest = gauge(
            "outbox_oldest_pending_age_seconds",
            "Age of the oldest PENDING outbox row since it was created",
        )
        self._processing = gauge("outbox_processing_count", "Outbox rows claimed by a relay")
        self._dead = gauge("outbox_dead_count", "Outbox rows past the attempt limit")
        gauge(
            "outbox_retry_rate",
            f"Share of failed attempts among this relay's last {DEFAULT_WINDOW} publish attempts",
        ).set_function(lambda: self.attempts.rate("failed"))
        self.timeouts = counter(
            "outbox_claim_timeout_count",
            "Claims taken back because their holder did not finish in time",
        )
        self._published = counter("relay_published", "Outbox rows published")

    def set_counts(self, counts: OutboxCounts) -> None:
        self._pending.set(counts.pending)
        self._processing.set(counts.processing)
        self._dead.set(counts.dead)
        self._oldest.set(counts.oldest_pending_age_s or 0.0)

    def attempted(self, published: int, failed: int) -> None:
        self.attempts.add("published", published)
        self.attempts.add("failed", failed)
        self._published.inc(published)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class Relay:
    """Publishes the outbox through `publisher`; `holder` names this relay in ``locked_by``."""

    def __init__(
        self,
        store: RelayStore,
        publisher: Publisher,
        settings: RelaySettings,
        *,
        holder: str,
        metrics: RelayMetrics | None = None,
    ) -> None:
        self._store = store
        self._publisher = publisher
        self._settings = settings
        self.holder = holder
        self._metrics = metrics if metrics is not None else RelayMetrics()
        self._retry = seed_retry(settings.max_attempts)
        self._stats_due = 0.0
        self._outage = 0  # consecutive ticks in which Kafka took nothing

    async def tick(self) -> TickReport:
        """Take back timed-out claims, claim a batch (committed PROCESSING before publishing),
        publish it and wait for the acknowledgements, then mark each row PUBLISHED or give it
        back after ``NextRetry``: of the row's attempts for its own fault (`row_fault`,
        DEAD at ``max_attempts``), of the outage's ticks for Kafka's (the relay waits as long
        before its next claim, so no outage makes a row DEAD)."""
        s = self._settings
        taken = await self._store.take_back(s.claim_timeout_s, s.max_attempts)
        if taken:
            self._metrics.timeouts.inc(taken)
            log.warning("took back %d timed-out claims", taken)
        claimed = await self._store.claim(self.holder, s.batch_size)
        if not claimed:
            return TickReport(taken_back=taken)
        results = await asyncio.gather(*(self._publish(e) for e in claimed))
        outcomes = list(zip(claimed, results, strict=True))
        published = [e.id for e, result in outcomes if result is None]
        failed = [(e, *result) for e, result in outcomes if result is not None]
        kafka_away = not published and any(not own for _, _, own in failed)
        self._outage = self._outage + 1 if kafka_away else 0
        failures = [
            Failure(
                e.id, error, retry_delay(self._retry, e.attempts if own else self._outage - 1), own
            )
            for e, error, own in failed
        ]
        await self._store.mark_published(published)
        dead = await self._store.mark_failed(self.holder, failures, s.max_attempts)
        counted = sum(f.counts for f in failures)
        self._metrics.attempted(len(published), len(failures))
        for f in failures:
            log.warning("publish of outbox row %d failed: %s", f.id, f.error)
        if dead:
            log.error("%d outbox rows are DEAD (searchsync relay dead)", dead)
        return TickReport(
            taken, len(claimed), len(published), counted, dead, len(failures) - counted
        )

    async def refresh_stats(self) -> None:
        self._metrics.set_counts(await self._store.counts())

    async def run(self, stop: asyncio.Event) -> None:
        """Tick until `stop`: at once after a full batch, else after ``poll_interval_s`` (also
        after a `TransientError`, logged), or the outage's backoff while Kafka is away."""
        s = self._settings
        while not stop.is_set():
            report = TickReport()
            try:
                report = await self.tick()
                if time.monotonic() >= self._stats_due:
                    await self.refresh_stats()
                    self._stats_due = time.monotonic() + s.stats_interval_s
            except TransientError as exc:
                log.warning("relay tick failed, trying again: %s", exc)
            wait = 0.0 if report.claimed >= s.batch_size else s.poll_interval_s
            if report.unavailable and not report.published:  # Kafka is away: back off
                wait = retry_delay(self._retry, self._outage - 1).total_seconds()
            if wait:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), wait)

    async def _publish(self, entry: OutboxEntry) -> tuple[str, bool] | None:
        """None once acknowledged, else why not and whether it was the row's own fault."""
        try:
            r = router_record(entry, self._settings.topic_template)
            sent = self._publisher.send(r.topic, r.value, r.key, headers=r.headers)
            await asyncio.wait_for(sent, self._settings.publish_timeout_s)
        except TimeoutError:
            return f"no acknowledgement within {self._settings.publish_timeout_s}s", False
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}", row_fault(exc)
        return None


async def run_relay(
    settings: Settings,
    store: RelayStore,
    *,
    stop: asyncio.Event,
    producer_factory: ProducerFactory,
) -> None:
    """Run one relay until `stop`; serves /metrics on ``relay.metrics_port`` when not 0. Its
    ``locked_by`` (at most 128 characters) is ``host:pid:random``."""
    metrics = RelayMetrics()
    holder = f"{socket.gethostname()[:96]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    config = {**settings.kafka.client_config(), **PARTITIONER}  # Java-compatible partitioner
    producer = AcknowledgedProducer(config, name="searchsync-relay", factory=producer_factory)
    server = await serve_job_metrics(
        settings.observability.metrics_host,
        settings.relay.metrics_port,
        metrics,
        port_setting="relay.metrics_port",
        details={"relay": holder},
    )
    try:
        log.info("relay %s publishing %s", holder, settings.relay.table)
        await Relay(store, producer, settings.relay, holder=holder, metrics=metrics).run(stop)
    finally:
        if server is not None:
            await server.close()
        unsent = await producer.close(settings.relay.publish_timeout_s)
        if unsent:
            log.warning(
                "%d records unacknowledged at exit; their claims will be taken back", unsent
            )
