"""`searchsync dlq inspect|summary|replay`: library `searchsync.dlq.replay`, output `dlq_output`."""

from __future__ import annotations

import argparse
from contextlib import closing
from typing import Any

from searchsync.cli.args import Parents, positive_int, utc_time
from searchsync.cli.dlq_output import (
    entry_json,
    entry_line,
    replay_json,
    replay_lines,
    summary_lines,
)
from searchsync.cli.output import show
from searchsync.config import Settings
from searchsync.dlq import replay as dlq
from searchsync.dlq.filter import DlqFilter
from searchsync.dlq.read import DlqTopic
from searchsync.exit_codes import ExitCode
from searchsync.kafka.admin import KAFKA_TIMEOUT_S
from searchsync.runtime import Runtime


def register(commands: Any, parents: Parents) -> None:
    group = commands.add_parser("dlq", help="inspect, summarise and replay dead letters")
    dlq_cmds = group.add_subparsers(dest="dlq_command", required=True, metavar="COMMAND")
    filters = _filters()
    inspect = dlq_cmds.add_parser(
        "inspect", parents=[*parents.data, filters], help="show dead letters (newest by default)"
    )
    inspect.add_argument("--limit", type=positive_int, default=20, help="default: 20")
    inspect.add_argument("--from-beginning", action="store_true", help="oldest dead letters")
    inspect.set_defaults(func=cmd_dlq_inspect)
    summary = dlq_cmds.add_parser(
        "summary", parents=parents.data, help="counts by code and type; what each replay became"
    )
    summary.set_defaults(func=cmd_dlq_summary)
    replay = dlq_cmds.add_parser(
        "replay",
        parents=[*parents.data, filters],
        help="re-produce dead letters to their topic (each once, unless --again)",
    )
    replay.add_argument("--dry-run", action="store_true", help="show what would be replayed")
    replay.add_argument("--limit", type=positive_int, help="replay at most N")
    replay.add_argument(
        "--again",
        action="store_true",
        help="also replay dead letters the replay ledger says were already replayed",
    )
    replay.set_defaults(func=cmd_dlq_replay)


def _filters() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--code", "--error-code", dest="error_code", metavar="CODE")
    parser.add_argument("--type", dest="aggregate_type", metavar="TYPE", help="aggregate type")
    parser.add_argument("--id", dest="aggregate_id", metavar="ID", help="aggregate id")
    parser.add_argument("--event-id", metavar="ID", help="only this event")
    parser.add_argument("--since", type=utc_time, metavar="TIME", help="last failed at or after")
    parser.add_argument("--until", type=utc_time, metavar="TIME", help="last failed before")
    return parser


def _selection(args: argparse.Namespace) -> DlqFilter:
    return DlqFilter(
        error_code=args.error_code,
        aggregate_type=args.aggregate_type,
        aggregate_id=args.aggregate_id,
        event_id=args.event_id,
        since=args.since,
        until=args.until,
    )


def dlq_topic(
    settings: Settings, runtime: Runtime, *, timeout_s: float = KAFKA_TIMEOUT_S
) -> DlqTopic:
    """The configured DLQ topic, read through the runtime's Kafka clients."""
    kafka, clients = settings.kafka, runtime.kafka
    return DlqTopic(
        kafka.client_config(), kafka.dlq_topic, clients.admin, clients.consumer, timeout_s
    )


def cmd_dlq_inspect(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    kafka = settings.kafka
    with closing(runtime.replay_ledger()) as ledger:
        entries = dlq.inspect(
            dlq_topic(settings, runtime),
            limit=args.limit,
            from_beginning=args.from_beginning,
            selection=_selection(args),
            ledger=ledger,
        )
    lines = [entry_line(kafka.dlq_topic, e) for e in entries] or [
        f"no dead letters in {kafka.dlq_topic}"
    ]
    show(args.json, [entry_json(e) for e in entries], lines)
    return ExitCode.OK


def cmd_dlq_summary(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    with closing(runtime.replay_ledger()) as ledger:
        result = dlq.summary(dlq_topic(settings, runtime), ledger=ledger)
    show(args.json, result.as_json(), summary_lines(result))
    return ExitCode.OK


def cmd_dlq_replay(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    kafka = settings.kafka
    with closing(runtime.replay_ledger()) as ledger:
        report = dlq.replay(
            dlq_topic(settings, runtime),
            ledger=ledger,
            dry_run=args.dry_run,
            selection=_selection(args),
            again=args.again,
            limit=args.limit,
            producer_factory=runtime.kafka.producer,
        )
    show(args.json, replay_json(kafka.dlq_topic, report), replay_lines(kafka.dlq_topic, report))
    return ExitCode.OK
