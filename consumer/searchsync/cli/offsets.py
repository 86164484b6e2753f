"""`searchsync offsets show` and `searchsync offsets reset` (library: `searchsync.ops.offsets`)."""

from __future__ import annotations

import argparse
import getpass
import socket
from collections.abc import Iterator
from dataclasses import asdict, replace
from functools import partial
from typing import Any

from searchsync.cli.args import command, group, non_negative_int, reset_target, with_tables
from searchsync.cli.output import PLAN_ONLY, err, show
from searchsync.config import Settings
from searchsync.errors import InvalidRequest
from searchsync.exit_codes import ExitCode
from searchsync.ops import offsets
from searchsync.ops.offsets import PartitionOffset
from searchsync.runtime import Runtime


def register(commands: Any) -> None:
    cmds = group(commands, "offsets", "committed offsets of the consumer group")
    about, each = "committed offset, high watermark and lag", "each Kafka request"
    showing = command(cmds, "show", cmd_offsets_show, about, timeout=each)
    showing.add_argument(
        "--group",
        metavar="GROUP",
        help="this consumer group, e.g. a rebuild's catch-up group (default: kafka.group_id)",
    )
    about = "move the group's offsets (group must be idle)"
    plan = "print the plan only"
    reset = command(cmds, "reset", cmd_offsets_reset, about, plan=plan, timeout=each)
    where = reset.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--to",
        type=reset_target,
        metavar="TARGET",
        help="earliest, latest, an offset, or a time (2026-11-30T12:00:00Z: the first offset "
        "at or after it, the end if none)",
    )
    where.add_argument(
        "--offset",
        type=non_negative_int,
        metavar="N",
        help="with --partition: that one partition to offset N (--topic if several topics)",
    )
    reset.add_argument("--topic", help="only this topic (default: every subscribed topic)")
    reset.add_argument("--partition", type=non_negative_int, help="only this partition")
    reset.add_argument(
        "--accept-gap",
        action="store_true",
        help="move partitions whose committed offset is below the log start (records lost to "
        "retention), or whose lineage does not match (a re-created topic, an offset above the "
        "log end), to the target, and record who accepted the loss and when; reconcile with "
        "`searchsync rebuild` first",
    )


def cmd_offsets_show(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    if args.group:
        settings = replace(settings, kafka=replace(settings.kafka, group_id=args.group))
    admin = runtime.kafka.admin(settings.kafka.client_config(), timeout_s=args.timeout)
    rows = offsets.partition_offsets(admin, settings)
    group, lag = settings.kafka.group_id, sum(r.lag for r in rows)
    document = {"group": group, "partitions": [asdict(r) for r in rows], "total_lag": lag}
    lines = [f"group {group}: none of the subscribed topics exists yet"]
    if rows:
        lines = [
            f"group {group}",
            f"{'TOPIC':<40} {'PART':>4} {'COMMITTED':>12} {'HIGH':>12} {'LAG':>10}",
        ]
        for r in rows:
            committed = "-" if r.committed is None else str(r.committed)
            lines.append(f"{r.topic:<40} {r.partition:>4} {committed:>12} {r.high:>12} {r.lag:>10}")
        lines.append(f"total lag {lag}")
    return show(args.json, document, lines)


def _reset_lines(report: offsets.ResetReport) -> Iterator[str]:
    verb = "would move" if report.dry_run else "moved"
    for s in report.steps:
        current = "-" if s.current is None else str(s.current)
        yield f"{verb} {s.topic}/{s.partition}: {current} -> {s.target}"
    for a in report.accepted:
        yield (
            f"{'would accept' if report.dry_run else 'accepted'} gap {a.topic}/{a.partition}: "
            f"{a.missing} record(s) lost ({a.committed}..{a.log_start - 1}) by {a.accepted_by} "
            f"at {a.accepted_at.isoformat(timespec='seconds')}"
        )
    for m in report.lineage:
        yield f"{'would accept' if report.dry_run else 'accepted'} {m.describe()}"


def cmd_offsets_reset(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    target: offsets.ResetTarget = args.to
    if args.offset is not None:
        if args.partition is None:
            raise InvalidRequest("--offset N needs --partition P (one partition of one topic)")
        target = PartitionOffset(args.partition, args.offset)
    group_id = settings.kafka.group_id
    report = offsets.reset(
        settings,
        target,
        topic=args.topic,
        partition=args.partition,
        dry_run=args.dry_run,
        admin_factory=partial(runtime.kafka.admin, timeout_s=args.timeout),
        accept_gap=f"{getpass.getuser()}@{socket.gethostname()}" if args.accept_gap else None,
        record=lambda acks: with_tables(runtime, lambda t: t.gap_acks.record(acks)),
        recorded=with_tables(runtime, lambda t: t.lineage.recorded(group_id)),
        accept_lineage=lambda ids, who: with_tables(
            runtime, lambda t: t.lineage.accept(group_id, ids, who)
        ),
    )
    group, members = report.group, report.active_members
    document = {
        "group": group,
        "target": report.target,
        "dry_run": report.dry_run,
        "active_members": list(members),
        "plan": [asdict(s) for s in report.steps],
        "accepted_gaps": [offsets.gap_fields(a) for a in report.accepted],
        "accepted_lineage": [asdict(m) for m in report.lineage],
    }
    show(args.json, document, _reset_lines(report))
    if members and not args.json:
        err(
            f"note: group {group} has active members ({', '.join(members)}); a real reset "
            "would be refused"
        )
    if report.dry_run and not args.json:
        err(PLAN_ONLY)
    return ExitCode.OK
