"""`searchsync rebuild --type T`: parses, runs `searchsync.ops.rebuild`, prints. Exit codes: 0 done
(or planned), 1 refused, interrupted or waiting for the live group (the message says what to run
next), 2 usage errors."""

from __future__ import annotations

import argparse
import asyncio
import sys
from contextlib import AsyncExitStack
from typing import Any

import orjson

from searchsync.cli.args import TYPE_HELP, chosen_type, command
from searchsync.cli.output import err, out
from searchsync.config import Settings
from searchsync.exit_codes import ExitCode
from searchsync.gc_tuning import tune_for_throughput
from searchsync.observability.http import HealthReport, HealthServer
from searchsync.observability.rebuild_metrics import RebuildMetrics
from searchsync.ops.rebuild.outcome import RebuildOptions, RebuildOutcome
from searchsync.ops.rebuild.progress import Progress
from searchsync.runtime import Runtime


def register(commands: Any) -> None:
    cmd = command(
        commands,
        "rebuild",
        cmd_rebuild,
        "rebuild a type's index into <alias>_v<N+1> and swap the alias",
        data=False,
        description="Watermark, new index, backfill, catch-up, verify, swap "
        "(docs/design.md, Rebuild). With --json, progress events and the final summary are "
        "printed as one JSON object per line.",
    )
    cmd.add_argument(
        "--json",
        action="store_true",
        help="print JSON lines: one object per progress event, then the summary",
    )
    cmd.add_argument("--type", help=TYPE_HELP)
    mode = cmd.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="continue the unfinished rebuild")
    mode.add_argument("--abandon", action="store_true", help="give up the unfinished rebuild")
    cmd.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    wait = cmd.add_mutually_exclusive_group()
    wait.add_argument(
        "--wait-for-live-group",
        dest="wait_for_live",
        action="store_true",
        default=True,
        help="after a swap that changes the schema version, keep the catch-up group writing "
        "until the redeployed live group has caught up (default)",
    )
    wait.add_argument(
        "--no-wait",
        dest="wait_for_live",
        action="store_false",
        help="stop the catch-up group after the swap; the index then waits for the redeploy",
    )


def cmd_rebuild(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    options = RebuildOptions(
        aggregate_type=chosen_type(runtime, args.type),
        resume=args.resume,
        abandon=args.abandon,
        dry_run=args.dry_run,
        wait_for_live=args.wait_for_live,
    )
    tune_for_throughput()
    outcome = asyncio.run(run_rebuild(runtime, options, json_lines=args.json))
    if args.json:  # the last JSON line: the summary
        summary = {"event": "summary", **outcome.summary()}
        out(orjson.dumps(summary, default=str).decode())
    else:
        if outcome.plan is not None:
            for key, value in outcome.plan.summary().items():
                out(f"{key}: {value}")
        (out if outcome.ok else err)(outcome.message)
    return ExitCode.OK if outcome.ok else ExitCode.FAILURE


async def run_rebuild(
    runtime: Runtime, options: RebuildOptions, *, json_lines: bool
) -> RebuildOutcome:
    """Run the rebuild `options` asks for on `runtime`, serving its metrics when configured."""
    settings = runtime.settings
    metrics = RebuildMetrics()
    progress = Progress(
        stream=sys.stdout if json_lines else sys.stderr,
        json_lines=json_lines,
        interval_s=settings.rebuild.progress_interval_s,
    )
    async with runtime, AsyncExitStack() as stack:
        rebuilder = await runtime.rebuilder(metrics=metrics, progress=progress)
        if settings.rebuild.metrics_port and not options.dry_run:
            server = HealthServer(
                settings.observability.metrics_host,
                settings.rebuild.metrics_port,
                metrics,
                lambda: HealthReport(ready=True, details={"rebuild": options.aggregate_type}),
                port_setting="rebuild.metrics_port",
            )
            await server.start()
            stack.push_async_callback(server.close)
            host = settings.observability.metrics_host
            err(f"rebuild metrics on http://{host}:{server.port}/metrics")
        return await rebuilder.run(options)
    raise AssertionError("unreachable")  # pragma: no cover
