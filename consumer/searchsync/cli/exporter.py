"""`searchsync exporter`: the group's broker-side state and the freshness canary on /metrics
(library: `searchsync.watch.exporter`)."""

from __future__ import annotations

import argparse
import asyncio
from contextlib import AsyncExitStack
from typing import Any

from searchsync.cli.args import Parents
from searchsync.cli.output import out
from searchsync.cli.run import until_signalled
from searchsync.clock import utc_now
from searchsync.config import Settings
from searchsync.exit_codes import ExitCode
from searchsync.observability.http import HealthServer
from searchsync.runtime import Runtime
from searchsync.watch.canary import Canary
from searchsync.watch.exporter import Exporter, ExporterMetrics
from searchsync.watch.group import KafkaPeek


def register(commands: Any, parents: Parents) -> None:
    exporter = commands.add_parser(
        "exporter",
        parents=[parents.common],
        help="serve the group's lag, members and oldest unfinished event as the broker sees"
        " them, and the freshness canary, on /metrics (needs no live member)",
    )
    exporter.add_argument(
        "--once",
        action="store_true",
        help="observe once (and read the canary once), print the metrics and exit",
    )
    exporter.set_defaults(func=cmd_exporter)


def cmd_exporter(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    """Run until SIGTERM/SIGINT (exit 0), or once with ``--once``."""
    from searchsync.observability.logs import configure_logging

    if not args.once:
        configure_logging(settings.observability.log_level, secrets=settings.secret_values())
    return ExitCode(asyncio.run(_go(settings, runtime, once=args.once)))


async def _go(settings: Settings, runtime: Runtime, *, once: bool) -> int:
    canary_on = settings.canary.interval_s > 0
    async with AsyncExitStack() as stack:
        peek = KafkaPeek(
            settings.kafka.client_config(),
            settings.kafka.group_id,
            timeout_s=settings.exporter.peek_timeout_s,
            factory=runtime.kafka.consumer,
        )
        stack.callback(peek.close)
        exporter = Exporter(
            settings,
            admin=runtime.kafka_admin(),
            peek=peek,
            metrics=ExporterMetrics(settings.exporter.expected_members, canary=canary_on),
            canary=await _canary(settings, stack) if canary_on else None,
            wall_clock=utc_now,
        )
        if once:
            await exporter.observe()
            if canary_on:
                await exporter.look()
            out(exporter.metrics.render().decode().rstrip("\n"))
            return ExitCode.OK
        e = settings.exporter
        server = HealthServer(
            e.metrics_host,
            e.metrics_port,
            exporter.metrics,
            exporter.health,
            port_setting="exporter.metrics_port",
        )
        await server.start()
        stack.push_async_callback(server.close)
        stop = await stack.enter_async_context(until_signalled())
        await exporter.run(stop)
    return ExitCode.OK


async def _canary(settings: Settings, stack: AsyncExitStack) -> Canary:
    """The canary on a small pool of its own and a search client."""
    from searchsync.mysql.pool import close_pool, open_pool
    from searchsync.search.client import make_es_client
    from searchsync.watch.canary import MysqlEsCanary

    pool = await open_pool(settings.mysql, maxsize=2)
    stack.push_async_callback(close_pool, pool)
    client = make_es_client(settings)
    stack.push_async_callback(client.close)
    return MysqlEsCanary(pool, client)
