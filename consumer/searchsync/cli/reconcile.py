"""`searchsync rebuild --type T` (`searchsync.ops.rebuild`): exit 1 when refused, interrupted or
waiting for the live group. `searchsync repair`: the hash wheel that finds drift and heals it
through the outbox; exit 1 when a bucket or sweep was interrupted or the live lag stopped the
rotation; ``--daemon`` serves metrics on ``repair.metrics_port`` (0: none)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from contextlib import AsyncExitStack
from dataclasses import asdict
from typing import Any

import orjson

from searchsync.cli.args import add_wait_switch, chosen_type, chosen_types, command, number, run_in
from searchsync.cli.output import err, out
from searchsync.config import Settings
from searchsync.errors import LeaseHeld
from searchsync.exit_codes import ExitCode
from searchsync.gc_tuning import tune_for_throughput
from searchsync.observability.http import serve_job_metrics
from searchsync.observability.rebuild_metrics import RebuildMetrics
from searchsync.observability.repair_metrics import RepairMetrics
from searchsync.ops.rebuild.plan import RebuildOptions, RebuildOutcome
from searchsync.ops.rebuild.progress import Progress
from searchsync.ops.repair.lease import RepairLease
from searchsync.ops.repair.model import BucketReport, FindingKind, RotationReport
from searchsync.ops.repair.wheel import run_repair
from searchsync.runtime import Runtime


def register_rebuild(commands: Any) -> None:
    cmd = command(
        commands,
        "rebuild",
        cmd_rebuild,
        "rebuild a type's index into <alias>_v<N+1> and swap the alias",
        json="print JSON lines: one object per progress event, then the summary",
        one_type=True,
        dry_run="print the plan, change nothing",
        description="Watermark, new index, backfill, catch-up, verify, swap "
        "(docs/design.md, Rebuild). With --json, progress events and the final summary are "
        "printed as one JSON object per line.",
    )
    mode = cmd.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="continue the unfinished rebuild")
    mode.add_argument("--abandon", action="store_true", help="give up the unfinished rebuild")
    wait = (
        "after a swap that changes the schema version, keep the catch-up group writing until the "
        "redeployed live group has caught up (default)"
    )
    no_wait = "stop the catch-up group after the swap; the index then waits for the redeploy"
    add_wait_switch(cmd, wait, no_wait)


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
        out(orjson.dumps({"event": "summary", **outcome.summary()}, default=str).decode())
    else:
        if outcome.plan is not None:
            out(*(f"{key}: {value}" for key, value in outcome.plan.summary().items()))
        (out if outcome.ok else err)(outcome.message)
    return ExitCode.OK if outcome.ok else ExitCode.FAILURE


async def run_rebuild(
    runtime: Runtime, options: RebuildOptions, *, json_lines: bool
) -> RebuildOutcome:
    settings = runtime.settings
    metrics = RebuildMetrics()
    progress = Progress(
        stream=sys.stdout if json_lines else sys.stderr,
        json_lines=json_lines,
        interval_s=settings.rebuild.progress_interval_s,
    )
    async with runtime, AsyncExitStack() as stack:
        rebuilder = await runtime.rebuilder(metrics=metrics, progress=progress)
        host = settings.observability.metrics_host
        server = await serve_job_metrics(
            host,
            0 if options.dry_run else settings.rebuild.metrics_port,
            metrics,
            port_setting="rebuild.metrics_port",
            details={"rebuild": options.aggregate_type},
        )
        if server is not None:
            stack.push_async_callback(server.close)
            err(f"rebuild metrics on http://{host}:{server.port}/metrics")
        return await rebuilder.run(options)


def register_repair(commands: Any) -> None:
    about = (
        "find drift between MySQL and Elasticsearch and heal it with REBUILD events (one repair "
        "per type at a time: --daemon waits for the lease, --once exits 5)"
    )
    repair = command(commands, "repair", cmd_repair, about, dry_run="report; append nothing")
    mode = repair.add_mutually_exclusive_group(required=True)
    mode.add_argument("--once", action="store_true", help="one rotation over every bucket")
    mode.add_argument("--daemon", action="store_true", help="scan the best buckets forever")
    repair.add_argument("--explain", action="store_true", help="print each choice's score")
    repair.add_argument(
        "--type", action="append", metavar="T", help="only this aggregate type (repeatable)"
    )
    repair.add_argument(
        "--content-share",
        type=number(lambda v: 0.0 <= v <= 1.0, "a share from 0 to 1"),
        metavar="X",
        help="share of buckets whose content is checked, 0..1 (default: 1 with --once,"
        " repair.content_share with --daemon)",
    )


def cmd_repair(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    projectors = [runtime.registry.get(t) for t in chosen_types(runtime, args.type)]
    share = 1.0 if args.once and args.content_share is None else args.content_share
    last: list[RotationReport] = []

    def on_report(report: RotationReport) -> None:
        last.append(report)
        if args.explain:
            err(*(f"{t} {choice.explain()}" for t, choice in report.choices))
        if args.json:
            out(json.dumps(to_json(report, dry_run=args.dry_run), sort_keys=True))
        else:
            out(*render(report, dry_run=args.dry_run))

    async def go() -> None:
        lease = RepairLease((await runtime.tables()).repair_lease, settings.repair.lease_s)
        types = [p.aggregate_type for p in projectors]
        async with lease.hold(types, wait=args.daemon, on_wait=err):
            wheel = await runtime.repair_wheel(
                projectors,
                dry_run=args.dry_run,
                progress=progress,
                kafka_admin=runtime.kafka_admin(),
                content_share=share,
            )
            await run_repair(
                wheel, settings, daemon=args.daemon, metrics=RepairMetrics(), on_report=on_report
            )

    tune_for_throughput()
    try:
        run_in(runtime, go)
    except LeaseHeld as exc:
        err(f"repair not started: {exc}")
        return ExitCode.BUSY
    if last and last[-1].stopped:
        err(f"repair stopped: {last[-1].stopped}")
    return ExitCode.FAILURE if last and not last[-1].complete else ExitCode.OK


def progress(bucket: BucketReport, n: int, total: int) -> None:
    done = 30 * n // max(total, 1)
    state = "interrupted" if bucket.interrupted else f"{len(bucket.findings)} findings"
    err(
        f"\r[{'#' * done}{'.' * (30 - done)}] {n}/{total} {bucket.aggregate_type}"
        f" bucket {bucket.bucket}: {state}"
    )


def to_json(report: RotationReport, *, dry_run: bool) -> dict[str, Any]:
    scanned = [b for b in report.buckets if b.interrupted is None]
    return {
        "dry_run": dry_run,
        "seconds": report.seconds,
        "epochs": {
            t: {k: v for k, v in asdict(e).items() if k != "aggregate_type"}
            for t, e in report.epochs.items()
        },
        "new_epochs": report.new_epochs,
        "counts": report.counts(),
        "buckets_scanned": len(scanned),
        "buckets_content_checked": sum(1 for b in scanned if b.content_checked),
        "buckets_interrupted": report.interrupted,
        "stopped": report.stopped,
        "oldest_bucket_age_s": report.oldest_age_s,
        "content_share": report.content_share,
        "appended": sum(p.appended for p in report.parts),
        "settled_away": sum(b.candidates - len(b.findings) for b in report.buckets),
        "strays": [
            {
                "aggregate_type": s.aggregate_type,
                "outside_key_space": s.outside,
                "misplaced": s.misplaced,
                "candidates": s.candidates,
                "confirmed": len(s.findings),
                "appended": s.appended,
                "ahead_of_row": s.ahead,
                "truncated": s.truncated,
                "interrupted": s.interrupted,
            }
            for s in report.strays
        ],
        "findings": [f.to_json() for f in report.findings()],
        "choices": [{"aggregate_type": t, **asdict(c)} for t, c in report.choices],
    }


def render(report: RotationReport, *, dry_run: bool) -> list[str]:
    data = to_json(report, dry_run=dry_run)
    lines = [f"repair rotation{' (dry run)' if dry_run else ''}: {report.seconds:.1f}s"]
    lines += [f"  {'kind':<14} {'count':>7}"]
    lines += [f"  {kind.value:<14} {data['counts'][kind.value]:>7}" for kind in FindingKind]
    lines.append(
        f"  buckets scanned {data['buckets_scanned']} (content checked "
        f"{data['buckets_content_checked']}, share {report.content_share:g}), interrupted"
        f" {data['buckets_interrupted']}"
    )
    for s in data["strays"]:
        state = "interrupted" if s["interrupted"] else f"{s['confirmed']} confirmed"
        more = " (truncated: the rest next rotation)" if s["truncated"] else ""
        lines.append(
            f"  strays of {s['aggregate_type']}: {s['outside_key_space']} without a bucket key"
            f"{more}, {s['misplaced']} misplaced; {state}"
            + (f", {s['ahead_of_row']} ahead of their row" if s["ahead_of_row"] else "")
        )
    lines.append(
        f"  appended {data['appended']} REBUILD events; settled away {data['settled_away']}"
    )
    if report.stopped:
        lines.append(f"  STOPPED: {report.stopped}")
    return lines
