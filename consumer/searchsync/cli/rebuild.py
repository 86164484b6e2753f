"""`searchsync rebuild --type T`: a new physical index behind the alias, without downtime.

The steps live in `searchsync.ops.rebuild`; this module parses, wires the real clients and prints.
Exit codes: 0 done (or planned), 1 refused, interrupted or waiting for the live group (the
message says what to run next), 2 usage errors.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from contextlib import AsyncExitStack
from typing import Any

import orjson

from searchsync.cli.args import Parents
from searchsync.cli.output import err, out
from searchsync.cli.services import Services
from searchsync.config import Settings
from searchsync.exit_codes import ExitCode
from searchsync.gc_tuning import tune_for_throughput
from searchsync.ops.rebuild.outcome import RebuildOptions, RebuildOutcome


def register(commands: Any, parents: Parents) -> None:
    cmd = commands.add_parser(
        "rebuild",
        parents=parents.data,
        help="rebuild a type's index into <alias>_v<N+1> and swap the alias",
        description="Watermark, new index, backfill, catch-up, verify, swap "
        "(docs/design.md, Rebuild). With --json, progress events and the final summary are "
        "printed as one JSON object per line.",
    )
    cmd.add_argument("--type", default="wiki_page", help="aggregate type (default: wiki_page)")
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
    cmd.set_defaults(func=cmd_rebuild)


def cmd_rebuild(args: argparse.Namespace, settings: Settings, services: Services) -> ExitCode:
    options = RebuildOptions(
        aggregate_type=args.type,
        resume=args.resume,
        abandon=args.abandon,
        dry_run=args.dry_run,
        wait_for_live=args.wait_for_live,
    )
    tune_for_throughput()
    outcome = asyncio.run(run_rebuild(settings, services, options, json_lines=args.json))
    if args.json:  # the last JSON line: the summary
        sys.stdout.write(
            orjson.dumps({"event": "summary", **outcome.summary()}, default=str).decode()
        )
        sys.stdout.write("\n")
        sys.stdout.flush()
    else:
        if outcome.plan is not None:
            for key, value in outcome.plan.summary().items():
                out(f"{key}: {value}")
        (out if outcome.ok else err)(outcome.message)
    return ExitCode.OK if outcome.ok else ExitCode.FAILURE


async def run_rebuild(
    settings: Settings, services: Services, options: RebuildOptions, *, json_lines: bool
) -> RebuildOutcome:
    """Wire the real clients (or the test's `services`) and run the rebuild."""
    from searchsync.app import run_consumer
    from searchsync.mysql.outbox import MysqlOutbox
    from searchsync.mysql.pool import close_pool, open_pool
    from searchsync.mysql.truth import MysqlTruth
    from searchsync.observability.http import HealthReport, HealthServer
    from searchsync.observability.rebuild_metrics import RebuildMetrics
    from searchsync.ops.rebuild.catchup import ConsumerCatchUp, catchup_settings
    from searchsync.ops.rebuild.progress import Progress
    from searchsync.ops.rebuild.reader import EsIndexReader
    from searchsync.ops.rebuild.runner import RebuildDeps, Rebuilder
    from searchsync.ops.rebuild.state import MysqlRebuildState, RebuildRecord
    from searchsync.search.es_index import BulkSizer, EsIndex

    registry = services.registry(settings)
    metrics = RebuildMetrics()
    progress = Progress(
        stream=sys.stdout if json_lines else sys.stderr,
        json_lines=json_lines,
        interval_s=settings.rebuild.progress_interval_s,
    )
    m, es_settings = settings.mysql, settings.elasticsearch
    async with AsyncExitStack() as stack:
        pool = await open_pool(m)
        stack.push_async_callback(close_pool, pool)
        es = services.es_client(settings)
        stack.push_async_callback(es.close)

        def catchup(record: RebuildRecord, topics: list[str]) -> ConsumerCatchUp:
            return ConsumerCatchUp(
                catchup_settings(settings, record.catchup_group, topics),
                registry=registry,
                write_targets={record.aggregate_type: record.target_index},
                runner=services.rebuild_catchup or run_consumer,
            )

        deps = RebuildDeps(
            settings=settings,
            registry=registry,
            index_admin=services.index_admin(es),
            writer=EsIndex(
                es,
                sizer=BulkSizer(es_settings.bulk_max_actions, es_settings.bulk_max_bytes),
                require_alias=False,  # the backfill addresses the new physical index
            ),
            reader=EsIndexReader(es),
            truth=MysqlTruth(pool),
            kafka=services.kafka_admin(settings.kafka.client_config()),
            state=MysqlRebuildState(pool),
            catchup=catchup,
            metrics=metrics,
            progress=progress,
            outbox=MysqlOutbox(pool),
        )
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
            err(
                f"rebuild metrics on http://{settings.observability.metrics_host}:{server.port}/metrics"
            )
        return await Rebuilder(deps).run(options)
    raise AssertionError("unreachable")  # pragma: no cover
