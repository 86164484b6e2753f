"""`searchsync dlq inspect` and `searchsync dlq replay` (library: `consumer.ops.dlq`)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from consumer.cli.args import Parents, positive_int
from consumer.cli.output import bytes_json, out, print_json
from consumer.cli.services import Services
from consumer.config import Settings
from consumer.exit_codes import ExitCode
from consumer.kafka.admin import KAFKA_TIMEOUT_S
from consumer.ops import dlq
from consumer.stream.dlq import DlqRecord


def register(commands: Any, parents: Parents) -> None:
    group = commands.add_parser("dlq", help="inspect and replay dead letters")
    dlq_cmds = group.add_subparsers(dest="dlq_command", required=True, metavar="COMMAND")
    inspect = dlq_cmds.add_parser(
        "inspect", parents=parents.data, help="show dead letters (newest first by default)"
    )
    inspect.add_argument("--limit", type=positive_int, default=20, help="default: 20")
    inspect.add_argument("--from-beginning", action="store_true", help="oldest dead letters")
    inspect.set_defaults(func=cmd_dlq_inspect)
    replay = dlq_cmds.add_parser(
        "replay", parents=parents.data, help="re-produce dead letters to their topic"
    )
    replay.add_argument("--dry-run", action="store_true", help="show what would be replayed")
    replay.add_argument("--event-id", metavar="ID", help="only this event")
    replay.add_argument("--error-code", metavar="CODE", help="only dead letters with this code")
    replay.add_argument("--limit", type=positive_int, help="replay at most N")
    replay.set_defaults(func=cmd_dlq_replay)


def record_json(record: DlqRecord) -> dict[str, Any]:
    fields = asdict(record)
    fields["operation"] = record.operation.value if record.operation is not None else None
    fields["first_failed_at"] = record.first_failed_at.isoformat()
    fields["last_failed_at"] = record.last_failed_at.isoformat()
    fields["original_key"] = bytes_json(record.original_key)
    fields["payload"] = bytes_json(record.payload)
    return fields


def record_line(record: DlqRecord) -> str:
    op = record.operation.value if record.operation is not None else "?"
    return (
        f"{record.original_topic}/{record.original_partition}/{record.original_offset} "
        f"event={record.event_id or '?'} {record.aggregate_type or '?'}/"
        f"{record.aggregate_id or '?'} rev={record.source_revision} op={op} "
        f"attempts={record.attempts} code={record.last_error_code} "
        f"at={record.last_failed_at.isoformat()} msg={record.last_error_message!r}"
    )


def cmd_dlq_inspect(args: argparse.Namespace, settings: Settings, services: Services) -> ExitCode:
    kafka = settings.kafka
    records = dlq.inspect(
        kafka.client_config(),
        kafka.dlq_topic,
        limit=args.limit,
        from_beginning=args.from_beginning,
        timeout_s=KAFKA_TIMEOUT_S,
        admin_factory=services.kafka_admin,
        consumer_factory=services.kafka_consumer,
    )
    if args.json:
        print_json([record_json(r) for r in records])
        return ExitCode.OK
    if not records:
        out(f"no dead letters in {kafka.dlq_topic}")
    for record in records:
        out(record_line(record))
    return ExitCode.OK


def cmd_dlq_replay(args: argparse.Namespace, settings: Settings, services: Services) -> ExitCode:
    kafka = settings.kafka
    report = dlq.replay(
        kafka.client_config(),
        kafka.dlq_topic,
        dry_run=args.dry_run,
        event_id=args.event_id,
        error_code=args.error_code,
        limit=args.limit,
        timeout_s=KAFKA_TIMEOUT_S,
        admin_factory=services.kafka_admin,
        consumer_factory=services.kafka_consumer,
        producer_factory=services.kafka_producer,
    )
    if args.json:
        print_json(
            {
                "dry_run": report.dry_run,
                "dlq_topic": kafka.dlq_topic,
                "scanned": report.scanned,
                "skipped": report.skipped,
                "replayed": [record_json(r) for r in report.replayed],
            }
        )
        return ExitCode.OK
    if report.scanned == 0:
        out(f"no dead letters to replay in {kafka.dlq_topic}")
        return ExitCode.OK
    verb = "would replay" if report.dry_run else "replayed"
    for record in report.replayed:
        out(f"{verb} {record_line(record)}")
    out(
        f"{verb} {len(report.replayed)} of {report.scanned} dead letters read from "
        f"{kafka.dlq_topic} ({report.skipped} skipped by filters)"
    )
    return ExitCode.OK
