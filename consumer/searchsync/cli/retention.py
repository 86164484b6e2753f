"""`searchsync tombstones purge` and `searchsync outbox prune`: delete what is older than a
retention window (library: `searchsync.ops.retention`)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from searchsync.cli.args import chosen_types, command, group, older_than, run_in, with_tables
from searchsync.cli.output import err, show
from searchsync.config import Settings
from searchsync.duration import format_duration
from searchsync.exit_codes import ExitCode
from searchsync.ops.retention import (
    PurgeReport,
    check_outbox_window,
    check_window,
    prune_outbox,
    purge_tombstones,
)
from searchsync.runtime import Runtime


def register(commands: Any) -> None:
    cmds = group(commands, "tombstones", "tombstone documents of deleted rows")
    about = "delete tombstones older than the retention window (guarded by seq_no)"
    plan = "count and list, delete nothing"
    purge = command(cmds, "purge", cmd_tombstones_purge, about, plan=plan)
    older_than(purge, "tombstones older than this (7d, 36h, 90m); at least [retention]'s minimum")
    purge.add_argument("--type", help="one aggregate type (default: every registered type)")
    cmds = group(commands, "outbox", "the search_outbox table")
    about = "delete captured outbox rows older than a window, in small batches"
    prune = command(cmds, "prune", cmd_outbox_prune, about, plan="count only, delete nothing")
    older_than(
        prune, "rows created before now minus this (7d, 36h); at least retention.min_outbox_age"
    )


def cmd_tombstones_purge(
    args: argparse.Namespace, settings: Settings, runtime: Runtime
) -> ExitCode:
    check_window(settings.retention, args.older_than)  # before any service is touched
    types = chosen_types(runtime, args.type)
    now = datetime.now(UTC)

    async def go() -> list[PurgeReport]:
        search = runtime.search()
        return [
            await purge_tombstones(
                search.physical,
                search.admin,
                settings.alias(t),
                settings.retention,
                args.older_than,
                now=now,
                dry_run=args.dry_run,
                progress=lambda r: err(
                    f"purge {r.alias}: {r.scanned} scanned, {r.deleted} deleted,"
                    f" {r.changed} changed meanwhile"
                ),
            )
            for t in types
        ]

    reports = run_in(runtime, go)
    document = {"dry_run": args.dry_run, "results": [r.as_json() for r in reports]}
    code = ExitCode.FAILURE if any(r.failed for r in reports) else ExitCode.OK
    return show(args.json, document, map(_summary, reports), plan=args.dry_run, code=code)


def _summary(r: PurgeReport) -> str:
    head = (
        f"{r.alias} -> {r.index}: tombstones older than {format_duration(r.older_than)} "
        f"(tombstoned before {r.before}):"
    )
    if r.dry_run:
        sample = f" (first: {', '.join(r.candidates)})" if r.candidates else ""
        return f"{head} would delete {r.scanned}{sample}"
    text = (
        f"{head} {r.deleted} deleted, {r.changed} skipped (changed meanwhile), "
        f"{r.gone} already gone, {r.failed} failed"
    )
    return text + "".join(f"\n  failed {doc_id}: {reason}" for doc_id, reason in r.failures)


def cmd_outbox_prune(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    check_outbox_window(settings.retention, args.older_than)  # before any service is touched
    now = datetime.now(UTC)
    report = with_tables(
        runtime,
        lambda t: prune_outbox(
            t.outbox,
            runtime.connect,
            settings.retention,
            args.older_than,
            now=now,
            dry_run=args.dry_run,
            progress=lambda r: err(
                f"prune: batch {r.batches}, {r.deleted} rows deleted, up to id {r.last_id}"
            ),
            published_only=settings.relay.enabled,
        ),
    )
    verb = "would delete" if report.dry_run else "deleted"
    line = (
        f"search_outbox: {verb} {report.deleted} rows created before "
        f"{report.created_before.isoformat()}Z (older than {format_duration(report.older_than)}) "
        f"in {report.batches} batches; {report.scanned} rows looked at"
    )
    return show(args.json, report.as_json(), [line], plan=report.dry_run)
