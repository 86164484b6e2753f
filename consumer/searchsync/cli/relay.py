"""`searchsync relay run | dead | revive`: the outbox's polling publisher, and its DEAD rows (past
``relay.max_attempts``) listed or, with ``--execute``, made PENDING again (docs/relay.md)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from searchsync.cli.args import command, group, positive_int, with_tables
from searchsync.cli.output import show
from searchsync.cli.run import until_signalled
from searchsync.config import Settings
from searchsync.exit_codes import ExitCode
from searchsync.relay.port import DeadRow
from searchsync.runtime import Runtime


def register(commands: Any) -> None:
    cmds = group(commands, "relay", "publish the outbox without Kafka Connect")
    command(cmds, "run", cmd_relay_run, "run the relay until stopped", data=False)
    dead = command(cmds, "dead", cmd_relay_dead, "list DEAD outbox rows")
    dead.add_argument("--limit", type=positive_int, default=100, help="at most this many")
    about = "put DEAD outbox rows back (with --execute)"
    revive = command(cmds, "revive", cmd_relay_revive, about)
    which = revive.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", type=positive_int, action="append", help="a row id (repeatable)")
    which.add_argument("--all", action="store_true", help="every DEAD row")
    revive.add_argument("--execute", action="store_true", help="revive; without it, only show")


def cmd_relay_run(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    from searchsync.observability.logs import configure_logging
    from searchsync.relay.run import run_relay

    configure_logging(settings.observability.log_level, secrets=settings.secret_values())

    async def go() -> None:
        async with until_signalled() as stop:
            await run_relay(settings, stop=stop, producer_factory=runtime.kafka.producer)

    asyncio.run(go())
    return ExitCode.OK


def cmd_relay_dead(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    rows = with_tables(runtime, lambda t: t.relay.dead(args.limit))
    _show(rows, args.json, f"{len(rows)} DEAD rows in {settings.relay.table}")
    return ExitCode.OK


def cmd_relay_revive(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    ids = None if args.all else sorted(set(args.id))
    if not args.execute:
        rows = with_tables(runtime, lambda t: t.relay.dead(1_000_000))
        chosen = [r for r in rows if ids is None or r.id in ids]
        _show(chosen, args.json, f"would revive {len(chosen)} DEAD rows (pass --execute)")
        return ExitCode.OK
    revived = with_tables(runtime, lambda t: t.relay.revive(ids))
    show(
        args.json, {"revived": revived}, [f"revived {revived} DEAD rows in {settings.relay.table}"]
    )
    return ExitCode.OK


def _show(rows: list[DeadRow], as_json: bool, summary: str) -> None:
    lines = [
        f"{r.id} {r.aggregate_type}/{r.aggregate_id} {r.operation} rev {r.source_revision}"
        f" attempts {r.attempts}: {r.last_error or ''}"
        for r in rows
    ]
    show(as_json, {"rows": [r.as_json() for r in rows]}, [*lines, summary])
