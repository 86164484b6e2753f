"""`searchsync outbox prune` (library: `searchsync.ops.prune`)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from searchsync.cli.args import command, group, older_than, plan_or_execute, with_tables
from searchsync.cli.output import err, show
from searchsync.config import Settings
from searchsync.duration import format_duration
from searchsync.exit_codes import ExitCode
from searchsync.ops.prune import PruneProgress, check_outbox_window, prune_outbox
from searchsync.runtime import Runtime


def register(commands: Any) -> None:
    cmds = group(commands, "outbox", "the search_outbox table")
    about = "delete captured outbox rows older than a window, in small batches"
    prune = command(cmds, "prune", cmd_outbox_prune, about)
    older_than(
        prune, "rows created before now minus this (7d, 36h); at least retention.min_outbox_age"
    )
    plan_or_execute(prune, "count only, delete nothing")


def _progress(r: PruneProgress) -> None:
    err(f"prune: batch {r.batches}, {r.deleted} rows deleted, up to id {r.last_id}")


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
            progress=_progress,
            published_only=settings.relay.enabled,
        ),
    )
    verb = "would delete" if report.dry_run else "deleted"
    line = (
        f"search_outbox: {verb} {report.deleted} rows created before "
        f"{report.created_before.isoformat()}Z (older than {format_duration(report.older_than)}) "
        f"in {report.batches} batches; {report.scanned} rows looked at"
    )
    show(args.json, report.as_json(), [line], plan=report.dry_run)
    return ExitCode.OK
