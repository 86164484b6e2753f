"""`searchsync dlq inspect|summary|replay` (library: `searchsync.dlq`), for humans or as JSON."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from contextlib import closing
from dataclasses import asdict
from typing import Any

from searchsync.cli.args import command, group, positive_int, utc_time
from searchsync.cli.output import show
from searchsync.config import Settings
from searchsync.dlq.replay import DlqFilter, ReplayReport, inspect, replay
from searchsync.dlq.replays import ReplayEntry
from searchsync.dlq.scan import DlqEntry, DlqTopic
from searchsync.dlq.summary import DlqSummary, summary
from searchsync.exit_codes import ExitCode
from searchsync.runtime import Runtime

_READ = "each Kafka request, and the whole read of the DLQ,"


def register(commands: Any) -> None:
    cmds = group(commands, "dlq", "inspect, summarise and replay dead letters")
    about = "show dead letters (newest by default)"
    inspecting = _filtered(command(cmds, "inspect", cmd_dlq_inspect, about, timeout=_READ))
    inspecting.add_argument("--limit", type=positive_int, default=20, help="default: 20")
    inspecting.add_argument("--from-beginning", action="store_true", help="oldest dead letters")
    about = "counts by code and type; what each replay became"
    command(cmds, "summary", cmd_dlq_summary, about, timeout=_READ)
    about = "re-produce dead letters to their topic (each once, unless --again)"
    plan = "show what would be replayed"
    replaying = _filtered(command(cmds, "replay", cmd_dlq_replay, about, plan=plan, timeout=_READ))
    replaying.add_argument("--limit", type=positive_int, help="replay at most N")
    replaying.add_argument(
        "--again",
        action="store_true",
        help="also replay dead letters the replay ledger says were already replayed",
    )


def _filtered(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--code", "--error-code", dest="error_code", metavar="CODE")
    parser.add_argument("--type", dest="aggregate_type", metavar="TYPE", help="aggregate type")
    parser.add_argument("--id", dest="aggregate_id", metavar="ID", help="aggregate id")
    parser.add_argument("--event-id", metavar="ID", help="only this event")
    parser.add_argument("--since", type=utc_time, metavar="TIME", help="last failed at or after")
    parser.add_argument("--until", type=utc_time, metavar="TIME", help="last failed before")
    return parser


def _selection(args: argparse.Namespace) -> DlqFilter:
    return DlqFilter(**{name: getattr(args, name) for name in DlqFilter.__dataclass_fields__})


def dlq_topic(settings: Settings, runtime: Runtime, *, timeout_s: float) -> DlqTopic:
    """The configured DLQ topic, read through the runtime's Kafka clients; `timeout_s` bounds
    each Kafka request and the whole read."""
    kafka, clients = settings.kafka, runtime.kafka
    return DlqTopic(
        kafka.client_config(), kafka.dlq_topic, clients.admin, clients.consumer, timeout_s
    )


def cmd_dlq_inspect(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    topic = settings.kafka.dlq_topic
    with closing(runtime.replay_ledger()) as ledger:
        entries = inspect(
            dlq_topic(settings, runtime, timeout_s=args.timeout),
            limit=args.limit,
            from_beginning=args.from_beginning,
            selection=_selection(args),
            ledger=ledger,
        )
    lines = [entry_line(topic, e) for e in entries] or [f"no dead letters in {topic}"]
    return show(args.json, [entry_json(e) for e in entries], lines)


def cmd_dlq_summary(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    with closing(runtime.replay_ledger()) as ledger:
        result = summary(dlq_topic(settings, runtime, timeout_s=args.timeout), ledger=ledger)
    return show(args.json, result.as_json(), summary_lines(result))


def cmd_dlq_replay(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    topic = settings.kafka.dlq_topic
    with closing(runtime.replay_ledger()) as ledger:
        report = replay(
            dlq_topic(settings, runtime, timeout_s=args.timeout),
            ledger=ledger,
            dry_run=args.dry_run,
            selection=_selection(args),
            again=args.again,
            limit=args.limit,
            producer_factory=runtime.kafka.producer,
        )
    document = {
        "dry_run": report.dry_run,
        "dlq_topic": topic,
        "run_id": report.run_id,
        "selection": dict(report.selection),
        "scanned": report.scanned,
        "skipped": report.skipped,
        "nothing_new": report.nothing_new,
        "replayed": [entry_json(e) for e in report.replayed],
        "already_replayed": [entry_json(e) for e in report.already_replayed],
    }
    plan = report.dry_run and bool(report.replayed)
    return show(args.json, document, replay_lines(topic, report), plan=plan)


def entry_json(entry: DlqEntry) -> dict[str, Any]:
    """The record's fields plus where it sits in the DLQ and what the ledger says about it (times,
    the operation and the record's bytes as `print_json` writes them)."""
    origin = entry.from_replay
    return {
        **asdict(entry.record),
        "dlq_partition": entry.partition,
        "dlq_offset": entry.offset,
        "kafka_timestamp": entry.timestamp,
        "replayed": entry.replayed,
        "replays": [
            {
                "replayed_at": r.replayed_at,
                "run_id": r.run_id,
                "selection": dict(r.selection),
                "replayed_to": f"{r.replayed_to_topic}/{r.replayed_to_partition}/"
                f"{r.replayed_to_offset}",
            }
            for r in entry.replays
        ],
        "from_replay_of": None if origin is None else _position(origin),
    }


def entry_line(dlq_topic: str, entry: DlqEntry) -> str:
    record = entry.record
    op = record.operation.value if record.operation is not None else "?"
    line = (
        f"{dlq_topic}/{entry.partition}/{entry.offset} "
        f"from {record.original_topic}/{record.original_partition}/{record.original_offset} "
        f"event={record.event_id or '?'} {record.aggregate_type or '?'}/"
        f"{record.aggregate_id or '?'} rev={record.source_revision} op={op} "
        f"attempts={record.attempts} code={record.last_error_code} "
        f"at={record.last_failed_at.isoformat()} msg={record.last_error_message!r}"
    )
    if entry.replays:
        last = entry.replays[-1].replayed_at.isoformat()
        line += f" [replayed {len(entry.replays)}x, last {last}]"
    if entry.from_replay is not None:
        line += f" [dead-lettered again after replay of {_position(entry.from_replay)}]"
    return line


def replay_lines(dlq_topic: str, report: ReplayReport) -> Iterator[str]:
    if report.scanned == 0:
        yield f"no dead letters to replay in {dlq_topic}"
        return
    if report.nothing_new:
        last = max(r.replayed_at for e in report.already_replayed for r in e.replays)
        yield (
            f"nothing to replay: the {len(report.already_replayed)} dead letter(s) this selection "
            f"picks were replayed already (last at {last.isoformat()}); --again replays them again"
        )
        return
    verb = "would replay" if report.dry_run else "replayed"
    for entry in report.replayed:
        yield f"{verb} {entry_line(dlq_topic, entry)}"
    yield (
        f"{verb} {len(report.replayed)} of {report.scanned} dead letters read from "
        f"{dlq_topic} ({report.skipped} skipped by filters, "
        f"{len(report.already_replayed)} replayed before)"
    )


def summary_lines(summary: DlqSummary) -> Iterator[str]:
    if summary.total == 0 and not summary.replays:
        yield f"no dead letters in {summary.topic}"
        return
    yield f"{summary.total} dead letters in {summary.topic}"
    if summary.total:
        yield f"  last failed: oldest {summary.oldest_failed_at}, newest {summary.newest_failed_at}"
        yield (
            f"  dead-lettered (Kafka time): {summary.oldest_timestamp} .."
            f" {summary.newest_timestamp}"
        )
        yield f"  by error code: {_counts(summary.by_code)}"
        yield f"  by aggregate type: {_counts(summary.by_type)}"
        yield (
            f"  replayed: {summary.replayed} of them; {summary.from_replays} came from a replay "
            "that failed again"
        )
    if not summary.replays:
        return
    outcomes = {k: v for k, v in summary.outcomes.items() if v}
    yield f"{len(summary.replays)} replays recorded ({_counts(outcomes)})"
    for status in summary.replays:
        r, again = status.replay, status.dead_letter
        became = "" if again is None else f" -> {summary.topic}/{again[0]}/{again[1]}"
        yield (
            f"  {r.replayed_at.isoformat()} {_position(r)} event={r.event_id or '?'} "
            f"{r.aggregate_type or '?'}/{r.aggregate_id or '?'} rev={r.source_revision} "
            f"{status.outcome.value}{became} (indexed revision {status.indexed_revision})"
        )


def _position(replay: ReplayEntry) -> str:
    return f"{replay.dlq_topic}/{replay.dlq_partition}/{replay.dlq_offset}"


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items())
