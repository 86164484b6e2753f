"""`searchsync run`: build every part from the settings, run the pipeline, shut down cleanly.

Exit codes (`searchsync.exit_codes.ExitCode`): OK after a clean shutdown (SIGTERM/SIGINT: intake
stops, in-flight work drains within the deadline, the finished prefix is committed), DLQ_BUDGET
when the DLQ error budget stopped the consumer, FAILURE on any other fatal error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Mapping
from contextlib import AsyncExitStack

from searchsync.config import Settings
from searchsync.dlq.record import DlqBudget, DlqProducer
from searchsync.errors import DlqBudgetExceeded
from searchsync.exit_codes import ExitCode
from searchsync.kafka.config import member_config
from searchsync.kafka.connect import ConnectClient
from searchsync.kafka.connector_watch import ConnectorWatch
from searchsync.kafka.intake import KafkaIntake
from searchsync.mysql.pool import close_pool, open_pool
from searchsync.mysql.state import ProjectionStateWriter
from searchsync.mysql.truth import MysqlTruth
from searchsync.observability.http import HealthReport, HealthServer
from searchsync.observability.metrics import Metrics
from searchsync.projection import ProjectorRegistry, registry_from_settings
from searchsync.search.client import make_es_client
from searchsync.search.elasticsearch import EsIndexAdmin
from searchsync.search.es_index import BulkSizer, EsIndex
from searchsync.search.sink import Sink
from searchsync.stream.fence import SchemaFence
from searchsync.stream.options import PipelineOptions
from searchsync.stream.pipeline import Pipeline
from searchsync.stream.processor import Processor
from searchsync.stream.retry import RetryPolicy

log = logging.getLogger(__name__)


async def run_consumer(
    settings: Settings,
    *,
    stop: asyncio.Event | None = None,
    registry: ProjectorRegistry | None = None,
    metrics: Metrics | None = None,
    write_targets: Mapping[str, str] | None = None,
) -> ExitCode:
    """Run one consumer of ``settings.kafka.group_id`` until `stop` is set.

    `write_targets` (aggregate type -> physical index) is the rebuild's catch-up override: those
    types are written to the named physical index with ``require_alias=false`` instead of through
    their alias (docs/design.md, Rebuild). Every other caller leaves it None.
    """
    stop = stop or asyncio.Event()
    if registry is None:  # a bad `projection.modules` stops start-up here, before any connection
        registry = registry_from_settings(settings.projection)
    metrics = metrics or Metrics()
    metrics.set_severe_lag_threshold(settings.observability.severe_lag_s)
    k, p = settings.kafka, settings.pipeline
    # one line per request at INFO would drown the one line per event outcome
    logging.getLogger("elastic_transport").setLevel(logging.WARNING)
    log.info("searchsync starting", extra={"settings": settings.redacted()})

    async with AsyncExitStack() as stack:
        pool = await open_pool(settings.mysql)
        stack.push_async_callback(close_pool, pool)
        es = make_es_client(settings)
        stack.push_async_callback(es.close)

        sink = Sink(
            EsIndex(
                es,
                sizer=BulkSizer(
                    settings.elasticsearch.bulk_max_actions, settings.elasticsearch.bulk_max_bytes
                ),
                require_alias=not write_targets,
            ),
            observer=metrics,
        )
        targets = dict(write_targets or {})

        def write_target(aggregate_type: str) -> str:
            return targets.get(aggregate_type) or settings.alias(aggregate_type)

        fence = SchemaFence(EsIndexAdmin(es), interval_s=p.fence_check_interval_s, observer=metrics)
        processor = Processor(
            registry=registry,
            truth=MysqlTruth(pool),
            sink=sink,
            alias_for=write_target,
            fence=fence,
        )
        dlq = DlqProducer(k.client_config(), topic=k.dlq_topic)
        stack.push_async_callback(_close_dlq, dlq)
        retry = RetryPolicy(
            base_delay=p.retry_base_delay_s,
            max_delay=p.retry_max_delay_s,
            max_attempts=p.retry_max_attempts,
            jitter=p.retry_jitter,
            rng=random.Random(),
        )
        pipeline = Pipeline(
            intake=None,
            processor=processor,
            dlq=dlq,
            budget=DlqBudget(p.dlq_max_ratio, p.dlq_window, p.dlq_max_consecutive),
            state=ProjectionStateWriter(pool),
            metrics=metrics,
            retry=retry,
            options=PipelineOptions(
                group_id=k.group_id,
                known_types=registry.types(),
                max_event_bytes=p.max_event_bytes,
                max_batch_works=settings.elasticsearch.bulk_max_actions,
                commit_interval_s=p.commit_interval_s,
                lag_interval_s=p.lag_poll_interval_s,
                consume_batch=k.poll_batch_size,
                consume_timeout_s=k.poll_timeout_s,
                revoke_drain_s=min(10.0, p.shutdown_deadline_s),
            ),
            max_in_flight_keys=p.max_in_flight_keys,
            max_queued_events=p.max_queued_events,
            fence=fence,
        )
        intake = KafkaIntake(
            member_config(k),
            k.subscription,
            pipeline,
            revoke_timeout_s=min(10.0, p.shutdown_deadline_s) + 5.0,
        )
        pipeline.attach_intake(intake)

        def health() -> HealthReport:
            ready, reasons = pipeline.health()
            details = {
                "group": k.group_id,
                "schema_fence": [state.as_json() for state in fence.states()],
            }
            return HealthReport(ready=ready, reasons=reasons, details=details)

        server = HealthServer(
            settings.observability.metrics_host,
            settings.observability.metrics_port,
            metrics,
            health,
        )
        await server.start()
        stack.push_async_callback(server.close)
        log.info(
            "searchsync running",
            extra={
                "metrics": f"http://{settings.observability.metrics_host}:{server.port}/metrics",
                "subscription": k.subscription,
                "group": k.group_id,
            },
        )

        await intake.start()
        if settings.connect.restart_failed_tasks:
            watch = ConnectorWatch(
                ConnectClient(settings.connect),
                interval_s=settings.connect.watch_interval_s,
                metrics=metrics,
            )
            watching = asyncio.create_task(watch.run(stop))
            stack.push_async_callback(_cancelled, watching)
        try:
            await pipeline.run(stop, drain_deadline_s=p.shutdown_deadline_s)
        except DlqBudgetExceeded as exc:
            log.error("stopped: %s", exc)
            await intake.close()
            return ExitCode.DLQ_BUDGET
        except Exception:
            log.exception("searchsync stopped on an unexpected error")
            await intake.close()
            return ExitCode.FAILURE
        await intake.close()
        log.info("searchsync stopped cleanly")
        return ExitCode.OK
    return ExitCode.OK  # pragma: no cover - the stack above always returns


async def _cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _close_dlq(dlq: DlqProducer) -> None:
    left = await dlq.close(10.0)
    if left:
        log.warning("dead letters still unacknowledged at shutdown", extra={"count": left})
