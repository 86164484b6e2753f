"""The ``searchsync`` command: parse arguments, build Settings once, call library code, print.

Exit codes (stable, for scripts):

- 0 ok;
- 1 operational failure (a service unreachable, a refused operation, a failed replay);
- 2 usage or configuration error (bad arguments, a `ConfigError`);
- 3 the DLQ error budget is exceeded (`DlqBudgetExceeded`).

Every command that prints data takes ``--json`` and then prints exactly one JSON document on
stdout; messages for humans (progress, refusals, errors) go to stderr. Settings come from
``load_settings(os.environ, --config or $SEARCHSYNC_CONFIG)`` and are built once per invocation.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import re
import secrets
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final, TextIO

import orjson

from consumer.config import Settings, load_settings
from consumer.errors import (
    ConfigError,
    DlqBudgetExceeded,
    InvalidRequest,
    SearchSyncError,
)
from consumer.ops import offsets
from consumer.ops.offsets import PartitionOffsets

__all__ = [
    "EXIT_CONFIG",
    "EXIT_DLQ_BUDGET",
    "EXIT_FAILURE",
    "EXIT_OK",
    "Progress",
    "build_parser",
    "main",
]

EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1
EXIT_CONFIG: Final = 2
EXIT_DLQ_BUDGET: Final = 3

CONFIG_ENV: Final = "SEARCHSYNC_CONFIG"
APP_USER_ENV: Final = "SEARCHSYNC_APP_MYSQL_USER"
APP_PASSWORD_ENV: Final = "SEARCHSYNC_APP_MYSQL_PASSWORD"
_KAFKA_TIMEOUT_S: Final = 15.0
_ACTIVE_STATES: Final = frozenset({"STABLE", "PREPARING_REBALANCING", "COMPLETING_REBALANCING"})


# --- entry point ---------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit code (the console script exits with it)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_CONFIG
    command: Callable[[argparse.Namespace, Settings], int] = args.func
    try:
        settings = load_settings(os.environ, _config_path(args))
        return command(args, settings)
    except ConfigError as exc:
        shown = "" if exc.got is None else f" (got {exc.got!r})"
        _err(f"config error: {exc.key}: expected {exc.expected}{shown}")
        return EXIT_CONFIG
    except InvalidRequest as exc:
        _err(f"usage error: {exc}")
        return EXIT_CONFIG
    except DlqBudgetExceeded as exc:
        _err(f"dlq budget exceeded: {exc}")
        return EXIT_DLQ_BUDGET
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_FAILURE
    except Exception as exc:  # every other failure is operational: say what and exit 1
        _err(f"error: {_describe(exc)}")
        return EXIT_FAILURE


def _config_path(args: argparse.Namespace) -> Path | None:
    raw = args.config if args.config is not None else os.environ.get(CONFIG_ENV)
    return Path(raw) if raw else None


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, SearchSyncError) else f"{type(exc).__name__}: {text}"


# --- argument parsing ----------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The whole command tree; each leaf sets ``func(args, settings) -> exit code``."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help=f"TOML settings file (default: ${CONFIG_ENV})",
    )
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print one JSON document")

    parser = argparse.ArgumentParser(
        prog="searchsync",
        description="Keep Elasticsearch consistent with MySQL (outbox -> Kafka -> consumer).",
        epilog="exit codes: 0 ok, 1 operational failure, 2 usage/config error, "
        "3 DLQ budget exceeded",
    )
    parser.add_argument("--config", metavar="PATH", default=None, help=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", parents=[common], help="run the consumer until stopped")
    run.set_defaults(func=cmd_run)

    index = commands.add_parser("index", help="manage the Elasticsearch alias and index")
    index_cmds = index.add_subparsers(dest="index_command", required=True, metavar="COMMAND")
    init = index_cmds.add_parser(
        "init", parents=[common, as_json], help="create <alias>_v1 behind the alias if missing"
    )
    init.add_argument("--type", default="wiki_page", help="aggregate type (default: wiki_page)")
    init.add_argument("--dry-run", action="store_true", help="say what would be done")
    init.set_defaults(func=cmd_index_init)
    describe = index_cmds.add_parser(
        "describe", parents=[common, as_json], help="show where each alias points"
    )
    describe.set_defaults(func=cmd_index_describe)

    dlq = commands.add_parser("dlq", help="inspect and replay dead letters")
    dlq_cmds = dlq.add_subparsers(dest="dlq_command", required=True, metavar="COMMAND")
    inspect = dlq_cmds.add_parser(
        "inspect", parents=[common, as_json], help="show dead letters (newest first by default)"
    )
    inspect.add_argument("--limit", type=_positive_int, default=20, help="default: 20")
    inspect.add_argument("--from-beginning", action="store_true", help="oldest dead letters")
    inspect.set_defaults(func=cmd_dlq_inspect)
    replay = dlq_cmds.add_parser(
        "replay", parents=[common, as_json], help="re-produce dead letters to their topic"
    )
    replay.add_argument("--dry-run", action="store_true", help="show what would be replayed")
    replay.add_argument("--event-id", metavar="ID", help="only this event")
    replay.add_argument("--error-code", metavar="CODE", help="only dead letters with this code")
    replay.add_argument("--limit", type=_positive_int, help="replay at most N")
    replay.set_defaults(func=cmd_dlq_replay)

    loadgen = commands.add_parser(
        "loadgen", parents=[common, as_json], help="write application traffic to MySQL"
    )
    loadgen.add_argument("--pages", type=_positive_int, required=True)
    loadgen.add_argument("--updates", type=_non_negative_int, required=True)
    loadgen.add_argument("--concurrency", type=_positive_int, required=True)
    loadgen.add_argument("--delete-ratio", type=_ratio, default=0.0, help="default: 0")
    loadgen.add_argument("--seed", type=int, default=0, help="default: 0")
    loadgen.add_argument("--id-prefix", help="page id prefix (default: a random one)")
    loadgen.add_argument(
        "--app-user", help=f"application MySQL user (default: ${APP_USER_ENV} or searchsync_app)"
    )
    loadgen.add_argument(
        "--app-password",
        help=f"its password (default: ${APP_PASSWORD_ENV} or searchsync_app)",
    )
    loadgen.set_defaults(func=cmd_loadgen)

    config = commands.add_parser("config", help="check the configuration")
    config_cmds = config.add_subparsers(dest="config_command", required=True, metavar="COMMAND")
    check = config_cmds.add_parser(
        "check", parents=[common, as_json], help="validate and print the settings (redacted)"
    )
    check.set_defaults(func=cmd_config_check)

    offsets = commands.add_parser("offsets", help="committed offsets of the consumer group")
    offsets_cmds = offsets.add_subparsers(dest="offsets_command", required=True, metavar="COMMAND")
    show = offsets_cmds.add_parser(
        "show", parents=[common, as_json], help="committed offset, high watermark and lag"
    )
    show.set_defaults(func=cmd_offsets_show)
    reset = offsets_cmds.add_parser(
        "reset", parents=[common, as_json], help="move the group's offsets (group must be idle)"
    )
    reset.add_argument(
        "--to", required=True, type=_reset_target, help="earliest, latest or an offset"
    )
    reset.add_argument("--topic", help="only this topic (default: every subscribed topic)")
    reset.add_argument("--partition", type=_non_negative_int, help="only this partition")
    reset.add_argument("--dry-run", action="store_true", help="print the plan only")
    reset.set_defaults(func=cmd_offsets_reset)
    return parser


def _positive_int(text: str) -> int:
    value = _non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 0.5], got {text!r}") from None
    if not 0.0 <= value <= 0.5:  # soft delete and restore each take this share
        raise argparse.ArgumentTypeError(f"expected a number in [0, 0.5], got {text!r}")
    return value


def _reset_target(text: str) -> str | int:
    if text in ("earliest", "latest"):
        return text
    if re.fullmatch(r"[0-9]{1,19}", text):
        return int(text)
    raise argparse.ArgumentTypeError(f"expected earliest, latest or an offset >= 0, got {text!r}")


# --- output --------------------------------------------------------------------------------------


def _out(text: str) -> None:
    print(text, file=sys.stdout, flush=True)


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _print_json(document: Any) -> None:
    sys.stdout.write(
        orjson.dumps(document, default=_json_default, option=orjson.OPT_INDENT_2).decode() + "\n"
    )
    sys.stdout.flush()


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return _bytes_json(value)
    if isinstance(value, set | frozenset | tuple):
        return sorted(value) if isinstance(value, set | frozenset) else list(value)
    return str(value)


def _bytes_json(value: bytes | None) -> Any:
    """UTF-8 text as a string; anything else as ``{"base64": ...}``."""
    if value is None:
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode("ascii")}


# --- run -----------------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    """Run the consumer until SIGTERM/SIGINT; its exit code is the command's."""
    from consumer.observability.logs import configure_logging

    try:
        from consumer.app import run_consumer  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        _err(f"error: the consumer is not available in this build ({exc})")
        return EXIT_FAILURE
    configure_logging(settings.observability.log_level)

    async def run() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        try:
            code: int = await run_consumer(settings, stop=stop)
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)
        return code

    return asyncio.run(run())


# --- index ---------------------------------------------------------------------------------------


def _es_client(settings: Settings) -> Any:
    from elasticsearch import AsyncElasticsearch

    es = settings.elasticsearch
    return AsyncElasticsearch(list(es.hosts), request_timeout=es.request_timeout_s)


def cmd_index_init(args: argparse.Namespace, settings: Settings) -> int:
    from consumer.projection import registry_from_settings
    from consumer.search.admin import init_index

    registry = registry_from_settings(settings.projection)
    if args.type not in registry.types():
        raise InvalidRequest(f"unknown aggregate type {args.type!r}; known: {registry.types()}")
    projector = registry.get(args.type)
    alias = settings.alias(args.type)

    async def go() -> Any:
        client = _es_client(settings)
        try:
            return await init_index(client, alias, projector.mapping, dry_run=args.dry_run)
        finally:
            await client.close()

    result = asyncio.run(go())
    message = {
        "exists": f"alias {result.alias} already exists (writes go to {result.index})",
        "created": f"created {result.index} behind alias {result.alias}",
        "alias_added": f"added alias {result.alias} to existing {result.index}",
        "would_create": f"would create {result.index} behind alias {result.alias}",
        "would_add_alias": f"would add alias {result.alias} to existing {result.index}",
    }[result.action.value]
    if args.json:
        _print_json(
            {
                "alias": result.alias,
                "index": result.index,
                "action": result.action.value,
                "dry_run": args.dry_run,
                "message": message,
            }
        )
    else:
        _out(message)
    return EXIT_OK


def cmd_index_describe(args: argparse.Namespace, settings: Settings) -> int:
    from consumer.projection import registry_from_settings
    from consumer.search.admin import describe

    types = registry_from_settings(settings.projection).types()

    async def go() -> list[Any]:
        client = _es_client(settings)
        try:
            return [await describe(client, settings.alias(t)) for t in types]
        finally:
            await client.close()

    found = asyncio.run(go())
    if args.json:
        _print_json(
            [
                {
                    "aggregate_type": t,
                    "alias": d.alias,
                    "exists": d.exists,
                    "indices": list(d.indices),
                    "write_index": d.write_index,
                }
                for t, d in zip(types, found, strict=True)
            ]
        )
        return EXIT_OK
    for t, d in zip(types, found, strict=True):
        if not d.exists:
            _out(f"{t}: alias {d.alias} does not exist (run `searchsync index init --type {t}`)")
        else:
            _out(f"{t}: alias {d.alias} -> {', '.join(d.indices)} (writes: {d.write_index})")
    return EXIT_OK


# --- dlq -----------------------------------------------------------------------------------------


def _record_json(record: Any) -> dict[str, Any]:
    fields = asdict(record)
    fields["operation"] = record.operation.value if record.operation is not None else None
    fields["first_failed_at"] = record.first_failed_at.isoformat()
    fields["last_failed_at"] = record.last_failed_at.isoformat()
    fields["original_key"] = _bytes_json(record.original_key)
    fields["payload"] = _bytes_json(record.payload)
    return fields


def _record_line(record: Any) -> str:
    op = record.operation.value if record.operation is not None else "?"
    return (
        f"{record.original_topic}/{record.original_partition}/{record.original_offset} "
        f"event={record.event_id or '?'} {record.aggregate_type or '?'}/"
        f"{record.aggregate_id or '?'} rev={record.source_revision} op={op} "
        f"attempts={record.attempts} code={record.last_error_code} "
        f"at={record.last_failed_at.isoformat()} msg={record.last_error_message!r}"
    )


def cmd_dlq_inspect(args: argparse.Namespace, settings: Settings) -> int:
    from consumer.stream import dlq

    kafka = settings.kafka
    records = dlq.inspect(
        kafka.bootstrap_servers,
        kafka.dlq_topic,
        limit=args.limit,
        from_beginning=args.from_beginning,
        extra=dict(kafka.extra),
        timeout_s=_KAFKA_TIMEOUT_S,
    )
    if args.json:
        _print_json([_record_json(r) for r in records])
        return EXIT_OK
    if not records:
        _out(f"no dead letters in {kafka.dlq_topic}")
    for record in records:
        _out(_record_line(record))
    return EXIT_OK


def cmd_dlq_replay(args: argparse.Namespace, settings: Settings) -> int:
    from consumer.stream import dlq

    kafka = settings.kafka
    report = dlq.replay(
        kafka.bootstrap_servers,
        kafka.dlq_topic,
        dry_run=args.dry_run,
        event_id=args.event_id,
        error_code=args.error_code,
        limit=args.limit,
        extra=dict(kafka.extra),
        timeout_s=_KAFKA_TIMEOUT_S,
    )
    if args.json:
        _print_json(
            {
                "dry_run": report.dry_run,
                "dlq_topic": kafka.dlq_topic,
                "scanned": report.scanned,
                "skipped": report.skipped,
                "replayed": [_record_json(r) for r in report.replayed],
            }
        )
        return EXIT_OK
    verb = "would replay" if report.dry_run else "replayed"
    for record in report.replayed:
        _out(f"{verb} {_record_line(record)}")
    _out(
        f"{verb} {len(report.replayed)} of {report.scanned} dead letters read from "
        f"{kafka.dlq_topic} ({report.skipped} skipped by filters)"
    )
    return EXIT_OK


# --- loadgen -------------------------------------------------------------------------------------


class Progress:
    """A progress line on `stream`: a bar redrawn with ``\\r`` on a TTY, periodic lines otherwise.

    `clock` is injected so tests decide when "periodic" is due.
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        label: str = "loadgen",
        interval_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        width: int = 30,
    ) -> None:
        self._stream = stream
        self._label = label
        self._interval_s = interval_s
        self._clock = clock
        self._width = width
        self._tty = bool(getattr(stream, "isatty", lambda: False)())
        self._last_at: float | None = None
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        now = self._clock()
        finished = done >= total
        due = self._last_at is None or now - self._last_at >= (
            0.1 if self._tty else self._interval_s
        )
        if not (due or finished):
            return
        self._last_at = now
        percent = 100.0 * done / total if total else 100.0
        if self._tty:
            filled = int(self._width * done / total) if total else self._width
            bar = "#" * filled + "-" * (self._width - filled)
            self._stream.write(f"\r{self._label} [{bar}] {done}/{total} {percent:5.1f}%")
            if finished:
                self._stream.write("\n")
        else:
            self._stream.write(f"{self._label}: {done}/{total} ({percent:.1f}%)\n")
        self._stream.flush()


def cmd_loadgen(args: argparse.Namespace, settings: Settings) -> int:
    from consumer.devtools.loadgen import run_loadgen
    from consumer.mysql.pool import create_pool
    from consumer.writer import PageWriter

    user = args.app_user or os.environ.get(APP_USER_ENV) or "searchsync_app"
    password = args.app_password or os.environ.get(APP_PASSWORD_ENV) or "searchsync_app"
    prefix = args.id_prefix if args.id_prefix is not None else f"lg{secrets.token_hex(4)}-"
    mysql = settings.mysql

    async def go() -> Any:
        pool = await create_pool(
            host=mysql.host,
            port=mysql.port,
            user=user,
            password=password,
            database=mysql.database,
            minsize=1,
            maxsize=max(1, args.concurrency),
            connect_timeout=mysql.connect_timeout_s,
        )
        try:
            return await run_loadgen(
                PageWriter(pool),
                pages=args.pages,
                updates=args.updates,
                concurrency=args.concurrency,
                delete_ratio=args.delete_ratio,
                seed=args.seed,
                id_prefix=prefix,
                progress=Progress(sys.stderr),
            )
        finally:
            pool.close()
            await pool.wait_closed()

    report = asyncio.run(go())
    counts = {
        "pages": report.pages,
        "planned": report.planned,
        "created": report.created,
        "updated": report.updated,
        "soft_deleted": report.soft_deleted,
        "restored": report.restored,
        "hard_deleted": report.hard_deleted,
        "recreated": report.recreated,
        "skipped": report.skipped,
        "retries": report.retries,
        "changes": report.changes,
    }
    if args.json:
        _print_json(
            {
                **counts,
                "seed": args.seed,
                "id_prefix": prefix,
                "final_revisions": report.final_revisions,
                "final_deleted": report.final_deleted,
                "hard_deleted_ids": sorted(report.hard_deleted_ids),
            }
        )
    else:
        _out(" ".join(f"{k}={v}" for k, v in counts.items()) + f" id_prefix={prefix}")
    return EXIT_OK


# --- config --------------------------------------------------------------------------------------


def cmd_config_check(args: argparse.Namespace, settings: Settings) -> int:
    redacted = settings.redacted()
    if args.json:
        _print_json(redacted)
        return EXIT_OK
    for section, values in redacted.items():
        for key, value in values.items():
            _out(f"{section}.{key} = {orjson.dumps(value, default=str).decode()}")
    _out("config ok")
    return EXIT_OK


# --- offsets -------------------------------------------------------------------------------------


def _group_consumer(settings: Settings) -> Any:
    return offsets.group_consumer(settings)


def _admin(settings: Settings) -> Any:
    return offsets.admin_client(settings)


def _lag_table(rows: Sequence[PartitionOffsets]) -> list[str]:
    lines = [f"{'TOPIC':<40} {'PART':>4} {'COMMITTED':>12} {'HIGH':>12} {'LAG':>10}"]
    for r in rows:
        committed = "-" if r.committed is None else str(r.committed)
        lines.append(f"{r.topic:<40} {r.partition:>4} {committed:>12} {r.high:>12} {r.lag:>10}")
    return lines


def cmd_offsets_show(args: argparse.Namespace, settings: Settings) -> int:
    rows = offsets.show(settings, consumer_factory=_group_consumer)
    group = settings.kafka.group_id
    if args.json:
        _print_json(
            {
                "group": group,
                "partitions": [asdict(r) for r in rows],
                "total_lag": sum(r.lag for r in rows),
            }
        )
        return EXIT_OK
    if not rows:
        _out(f"group {group}: none of the subscribed topics exists yet")
        return EXIT_OK
    _out(f"group {group}")
    for line in _lag_table(rows):
        _out(line)
    _out(f"total lag {sum(r.lag for r in rows)}")
    return EXIT_OK


def cmd_offsets_reset(args: argparse.Namespace, settings: Settings) -> int:
    report = offsets.reset(
        settings,
        args.to,
        topic=args.topic,
        partition=args.partition,
        dry_run=args.dry_run,
        consumer_factory=_group_consumer,
        admin_factory=_admin,
    )
    group, members = report.group, report.active_members
    if args.json:
        _print_json(
            {
                "group": group,
                "dry_run": report.dry_run,
                "active_members": list(members),
                "plan": [asdict(s) for s in report.steps],
            }
        )
        return EXIT_OK
    verb = "would move" if report.dry_run else "moved"
    for s in report.steps:
        current = "-" if s.current is None else str(s.current)
        _out(f"{verb} {s.topic}/{s.partition}: {current} -> {s.target}")
    if members:
        _err(
            f"note: group {group} has active members ({', '.join(members)}); a real reset "
            "would be refused"
        )
    return EXIT_OK
