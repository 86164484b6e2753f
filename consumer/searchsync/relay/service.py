"""Run a `Relay` over the outbox table and a producer until stopped (the runtime gives both)."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid

from searchsync.config import Settings
from searchsync.kafka.producer import AcknowledgedProducer, ProducerFactory
from searchsync.observability.http import serve_job_metrics
from searchsync.relay.port import PARTITIONER, RelayStore
from searchsync.relay.relay import Relay, RelayMetrics

log = logging.getLogger(__name__)


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
        relay = Relay(
            store,
            producer,
            settings.relay,
            holder=holder,
            metrics=metrics,
        )
        log.info("relay %s publishing %s", holder, settings.relay.table)
        await relay.run(stop)
    finally:
        if server is not None:
            await server.close()
        unsent = await producer.close(settings.relay.publish_timeout_s)
        if unsent:
            log.warning(
                "%d records unacknowledged at exit; their claims will be taken back", unsent
            )
