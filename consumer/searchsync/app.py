"""The consumer: the pipeline, its group member and its health server, on the ports and clients
`searchsync.runtime.Runtime.run_consumer` opened (it opens every one). Exits OK after a clean
shutdown (intake stops, in-flight work drains within the deadline, the finished prefix is
committed), DLQ_BUDGET when the DLQ error budget stopped it, FAILURE on any other fatal error."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import asdict

from searchsync.config import Settings
from searchsync.dlq.record import DlqBudget, DlqProducer
from searchsync.errors import DlqBudgetExceeded
from searchsync.exit_codes import ExitCode
from searchsync.kafka.admin import KafkaAdmin
from searchsync.kafka.config import member_config
from searchsync.kafka.connect import ConnectorState
from searchsync.kafka.connector_watch import ConnectorWatch
from searchsync.kafka.gaps import Blocked, GapBoard
from searchsync.kafka.intake import KafkaIntake
from searchsync.kafka.lineage import REASON, LineageCheck, LineageMismatch, watch_lineage
from searchsync.observability.http import HealthReport, HealthServer
from searchsync.observability.metrics import Metrics
from searchsync.ops.fanout_worker import FanoutWorker
from searchsync.ops.offsets import subscribed_topics
from searchsync.projection import ProjectorRegistry
from searchsync.projection.references import event_types, referenced_types
from searchsync.projection.topics import subscription, topic_problems
from searchsync.resources import SearchEngines, Stores
from searchsync.search.sink import Sink
from searchsync.stream.fence import SchemaFence
from searchsync.stream.pipeline import Pipeline
from searchsync.stream.processor import Processor
from searchsync.stream.retry import RetryPolicy

log = logging.getLogger(__name__)


async def run_consumer(
    settings: Settings,
    *,
    stop: asyncio.Event,
    registry: ProjectorRegistry,
    metrics: Metrics,
    tables: Stores,
    search: SearchEngines,
    kafka_admin: KafkaAdmin,
    dlq: DlqProducer,
    connect: ConnectorState,
    write_targets: Mapping[str, str] | None = None,
) -> ExitCode:
    """Run one consumer of ``settings.kafka.group_id`` until `stop` is set; `dlq` is closed (and
    flushed) here. `write_targets` (type -> physical index) is only the rebuild's catch-up
    override of the aliases."""
    metrics.set_severe_lag_threshold(settings.observability.severe_lag_s)
    k, p = settings.kafka, settings.pipeline
    topics = subscription(settings, event_types(registry))
    for problem in topic_problems(settings, event_types(registry)):
        log.warning("topics: %s", problem)  # `config check` refuses it; a run still reads them
    async with AsyncExitStack() as stack:
        sink = Sink(search.physical if write_targets else search.aliased, observer=metrics)
        fence = SchemaFence(search.admin, interval_s=p.fence_check_interval_s, observer=metrics)
        processor = Processor(
            registry=registry,
            truth=tables.truth,
            sink=sink,
            alias_for=lambda aggregate_type: (
                (write_targets or {}).get(aggregate_type) or settings.alias(aggregate_type)
            ),
            fence=fence,
            fanout=tables.fanout,
            owners=tables.owners,
        )
        stack.push_async_callback(_close_dlq, dlq)
        retry = RetryPolicy(
            base_delay=p.retry_base_delay_s,
            max_delay=p.retry_max_delay_s,
            max_attempts=p.retry_max_attempts,
            jitter=p.retry_jitter,
            rng=random.Random(),
        )
        pipeline = Pipeline(
            processor=processor,
            dlq=dlq,
            budget=DlqBudget(p.dlq_max_ratio, p.dlq_window, p.dlq_max_consecutive),
            state=tables.projection_state,
            metrics=metrics,
            retry=retry,
            settings=settings,
            known_types=event_types(registry),
            fence=fence,
        )
        revoke_timeout_s = min(10.0, p.shutdown_deadline_s) + 5.0
        lineage = LineageCheck(
            tables.lineage,
            k.group_id,
            kafka_admin.topic_ids,
            asyncio.get_running_loop(),
            timeout_s=revoke_timeout_s,
        )
        intake = KafkaIntake(
            member_config(k),
            topics,
            pipeline,
            revoke_timeout_s=revoke_timeout_s,
            gaps=GapBoard(metrics),
            fresh_start=k.auto_offset_reset,
            lineage=lineage,
        )

        def health() -> HealthReport:
            ready, reasons = pipeline.health()
            blocked = intake.guard.board.blocked()
            reasons = [*reasons, *intake.guard.board.reasons()]
            details = {
                "group": k.group_id,
                "schema_fence": [state.as_json() for state in fence.states()],
                "blocked": [_blocked_json(gap) for gap in blocked],
            }
            return HealthReport(ready=ready and not blocked, reasons=reasons, details=details)

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
                "subscription": topics,
                "group": k.group_id,
            },
        )

        await intake.start()
        if settings.connect.restart_failed_tasks:
            interval_s = settings.connect.watch_interval_s
            watch = ConnectorWatch(connect, interval_s=interval_s, metrics=metrics)
            watching = asyncio.create_task(watch.run(stop))
            stack.push_async_callback(_cancelled, watching)
        broken: list[str] = []

        async def lineage_watch() -> None:
            topics = functools.partial(subscribed_topics, kafka_admin, settings)
            why = await watch_lineage(lineage, topics, interval_s=k.lineage_check_s, stop=stop)
            if why is not None:
                log.error("%s: %s; stopping, the next assignment blocks it", REASON, why)
                broken.append(why)
                stop.set()

        stack.push_async_callback(_cancelled, asyncio.create_task(lineage_watch()))
        if settings.fanout.enabled and referenced_types(registry) and not write_targets:
            worker = FanoutWorker(
                tables.fanout,
                registry,
                settings.fanout,
                metrics=metrics,
                live_age=pipeline.oldest_unfinished_age_s,
            )
            stack.push_async_callback(_cancelled, asyncio.create_task(worker.run(stop)))
        try:
            await pipeline.run(intake, stop, drain_deadline_s=p.shutdown_deadline_s)
        except DlqBudgetExceeded as exc:
            log.error("stopped: %s", exc)
            return ExitCode.DLQ_BUDGET
        except Exception:
            log.exception("searchsync stopped on an unexpected error")
            return ExitCode.FAILURE
        finally:
            await intake.close()
        if broken:
            return ExitCode.FAILURE
        log.info("searchsync stopped cleanly")
        return ExitCode.OK
    return ExitCode.OK  # pragma: no cover - the stack above always returns


def _blocked_json(gap: Blocked) -> dict[str, object]:
    reason = "lineage_mismatch" if isinstance(gap, LineageMismatch) else "history_gap"
    return asdict(gap) | {"missing": gap.missing, "reason": reason}


async def _cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _close_dlq(dlq: DlqProducer) -> None:
    left = await dlq.close(10.0)
    if left:
        log.warning("dead letters still unacknowledged at shutdown", extra={"count": left})
