"""The long-running commands, each until SIGTERM/SIGINT: `searchsync run` (the consumer),
`searchsync relay run` (the outbox's polling publisher; ``relay dead|revive`` list its DEAD rows,
past ``relay.max_attempts``, or with ``--execute`` make them PENDING again, docs/relay.md) and
`searchsync exporter` (the group's broker-side state and the freshness canary on /metrics)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from searchsync.cli.args import command, group, positive_int, with_tables
from searchsync.cli.output import err, out, show
from searchsync.clock import utc_now
from searchsync.config import Settings
from searchsync.exit_codes import ExitCode
from searchsync.gc_tuning import tune_for_throughput
from searchsync.observability.http import HealthServer
from searchsync.observability.logs import configure_logging
from searchsync.relay.port import DeadRow
from searchsync.runtime import Runtime
from searchsync.watch.exporter import Exporter, ExporterMetrics
from searchsync.watch.group import KafkaPeek


def register(commands: Any) -> None:
    command(commands, "run", cmd_run, "run the consumer until stopped", json=None)


def cmd_run(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    try:
        import searchsync.app  # noqa: F401  # the pipeline: is it in this build?
    except ImportError as exc:
        err(f"error: the consumer is not available in this build ({exc})")
        return ExitCode.FAILURE
    configure_logging(settings.observability.log_level, secrets=settings.secret_values())
    tune_for_throughput()

    async def go() -> int:
        async with until_signalled() as stop, runtime:
            return await runtime.run_consumer(stop)

    return ExitCode(asyncio.run(go()))


@asynccontextmanager
async def until_signalled() -> AsyncIterator[asyncio.Event]:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        yield stop
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


def register_relay(commands: Any) -> None:
    cmds = group(commands, "relay", "publish the outbox without Kafka Connect")
    command(cmds, "run", cmd_relay_run, "run the relay until stopped", json=None)
    dead = command(cmds, "dead", cmd_relay_dead, "list DEAD outbox rows")
    dead.add_argument("--limit", type=positive_int, default=100, help="at most this many")
    plan = "list the rows it would revive"
    revive = command(cmds, "revive", cmd_relay_revive, "put DEAD outbox rows back", plan=plan)
    which = revive.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", type=positive_int, action="append", help="a row id (repeatable)")
    which.add_argument("--all", action="store_true", help="every DEAD row")


def cmd_relay_run(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    from searchsync.relay.relay import run_relay

    configure_logging(settings.observability.log_level, secrets=settings.secret_values())

    async def go() -> None:
        async with until_signalled() as stop, runtime:
            store = (await runtime.tables()).relay
            await run_relay(settings, store, stop=stop, producer_factory=runtime.kafka.producer)

    asyncio.run(go())
    return ExitCode.OK


def cmd_relay_dead(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    rows = with_tables(runtime, lambda t: t.relay.dead(args.limit))
    return _show(rows, args.json, f"{len(rows)} DEAD rows in {settings.relay.table}")


def cmd_relay_revive(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    ids = None if args.all else sorted(set(args.id))
    if args.dry_run:
        rows = with_tables(runtime, lambda t: t.relay.dead(1_000_000))
        chosen = [r for r in rows if ids is None or r.id in ids]
        return _show(chosen, args.json, f"would revive {len(chosen)} DEAD rows", plan=True)
    revived = with_tables(runtime, lambda t: t.relay.revive(ids))
    document = {"dry_run": False, "revived": revived}
    return show(args.json, document, [f"revived {revived} DEAD rows in {settings.relay.table}"])


def _show(rows: list[DeadRow], as_json: bool, summary: str, *, plan: bool = False) -> ExitCode:
    lines = [
        f"{r.id} {r.aggregate_type}/{r.aggregate_id} {r.operation} rev {r.source_revision}"
        f" attempts {r.attempts}: {r.last_error or ''}"
        for r in rows
    ]
    document = {**({"dry_run": True} if plan else {}), "rows": [r.as_json() for r in rows]}
    return show(as_json, document, [*lines, summary], plan=plan)


def register_exporter(commands: Any) -> None:
    exporter = command(
        commands,
        "exporter",
        cmd_exporter,
        "serve the group's lag, members and oldest unfinished event as the broker sees"
        " them, and the freshness canary, on /metrics (needs no live member)",
        json=None,
        timeout="each question to the broker",
    )
    exporter.add_argument(
        "--once",
        action="store_true",
        help="observe once (and read the canary once), print the metrics and exit",
    )


def cmd_exporter(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    """Run until SIGTERM/SIGINT (exit 0), or once with ``--once`` (exit 1 with the one-line reason
    when the group could not be observed; its log lines, librdkafka's too, are not printed)."""
    if not args.once:
        configure_logging(settings.observability.log_level, secrets=settings.secret_values())
    elif not (quiet := logging.getLogger("searchsync")).handlers:
        quiet.addHandler(logging.NullHandler())
    return ExitCode(asyncio.run(_serve_exporter(settings, runtime, args)))


async def _serve_exporter(settings: Settings, runtime: Runtime, args: argparse.Namespace) -> int:
    canary_on = settings.canary.interval_s > 0
    async with AsyncExitStack() as stack:
        stack.push_async_callback(runtime.aclose)
        peek = KafkaPeek(
            settings.kafka.client_config(),
            settings.kafka.group_id,
            timeout_s=settings.exporter.peek_timeout_s,
            factory=runtime.kafka.consumer,
        )
        stack.callback(peek.close)
        exporter = Exporter(
            settings,
            admin=runtime.kafka.admin(settings.kafka.client_config(), timeout_s=args.timeout),
            peek=peek,
            metrics=ExporterMetrics(settings.exporter.expected_members, canary=canary_on),
            canary=await runtime.canary() if canary_on else None,
            wall_clock=utc_now,
        )
        if args.once:
            await exporter.observe()
            if canary_on:
                await exporter.read_canary()
            out(exporter.metrics.render().decode().rstrip("\n"))
            if exporter.last_failure is not None:
                raise exporter.last_failure
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
