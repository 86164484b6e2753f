"""`searchsync dlq inspect|summary|replay` (library: `searchsync.dlq`; output: `dlq_output`)."""

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
from searchsync.dlq.filter import DlqFilter
from searchsync.dlq.read import DlqTopic
from searchsync.dlq.replay import inspect, replay
from searchsync.dlq.summary import summary
from searchsync.exit_codes import ExitCode
from searchsync.kafka.admin import KAFKA_TIMEOUT_S
from searchsync.runtime import Runtime


def register(commands: Any, parents: Parents) -> None:
    group = commands.add_parser("dlq", help="inspect, summarise and replay dead letters")
    cmds = group.add_subparsers(dest="dlq_command", required=True, metavar="COMMAND")
    filters = argparse.ArgumentParser(add_help=False)
    filters.add_argument("--code", "--error-code", dest="error_code", metavar="CODE")
    filters.add_argument("--type", dest="aggregate_type", metavar="TYPE", help="aggregate type")
    filters.add_argument("--id", dest="aggregate_id", metavar="ID", help="aggregate id")
    filters.add_argument("--event-id", metavar="ID", help="only this event")
    filters.add_argument("--since", type=utc_time, metavar="TIME", help="last failed at or after")
    filters.add_argument("--until", type=utc_time, metavar="TIME", help="last failed before")
    selected = [*parents.data, filters]
    inspecting = cmds.add_parser(
        "inspect", parents=selected, help="show dead letters (newest by default)"
    )
    inspecting.add_argument("--limit", type=positive_int, default=20, help="default: 20")
    inspecting.add_argument("--from-beginning", action="store_true", help="oldest dead letters")
    inspecting.set_defaults(func=cmd_dlq_inspect)
    cmds.add_parser(
        "summary", parents=parents.data, help="counts by code and type; what each replay became"
    ).set_defaults(func=cmd_dlq_summary)
    replaying = cmds.add_parser(
        "replay",
        parents=selected,
        help="re-produce dead letters to their topic (each once, unless --again)",
    )
    replaying.add_argument("--dry-run", action="store_true", help="show what would be replayed")
    replaying.add_argument("--limit", type=positive_int, help="replay at most N")
    replaying.add_argument(
        "--again",
        action="store_true",
        help="also replay dead letters the replay ledger says were already replayed",
    )
    replaying.set_defaults(func=cmd_dlq_replay)


def _selection(args: argparse.Namespace) -> DlqFilter:
    return DlqFilter(**{name: getattr(args, name) for name in DlqFilter.__dataclass_fields__})


def dlq_topic(
    settings: Settings, runtime: Runtime, *, timeout_s: float = KAFKA_TIMEOUT_S
) -> DlqTopic:
    """The configured DLQ topic, read through the runtime's Kafka clients."""
    kafka, clients = settings.kafka, runtime.kafka
    return DlqTopic(
        kafka.client_config(), kafka.dlq_topic, clients.admin, clients.consumer, timeout_s
    )


def cmd_dlq_inspect(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    topic = settings.kafka.dlq_topic
    with closing(runtime.replay_ledger()) as ledger:
        entries = inspect(
            dlq_topic(settings, runtime),
            limit=args.limit,
            from_beginning=args.from_beginning,
            selection=_selection(args),
            ledger=ledger,
        )
    lines = [entry_line(topic, e) for e in entries] or [f"no dead letters in {topic}"]
    show(args.json, [entry_json(e) for e in entries], lines)
    return ExitCode.OK


def cmd_dlq_summary(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    with closing(runtime.replay_ledger()) as ledger:
        result = summary(dlq_topic(settings, runtime), ledger=ledger)
    show(args.json, result.as_json(), summary_lines(result))
    return ExitCode.OK


def cmd_dlq_replay(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    topic = settings.kafka.dlq_topic
    with closing(runtime.replay_ledger()) as ledger:
        report = replay(
            dlq_topic(settings, runtime),
            ledger=ledger,
            dry_run=args.dry_run,
            selection=_selection(args),
            again=args.again,
            limit=args.limit,
            producer_factory=runtime.kafka.producer,
        )
    show(args.json, replay_json(topic, report), replay_lines(topic, report))
    return ExitCode.OK
