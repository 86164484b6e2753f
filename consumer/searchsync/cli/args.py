"""Argument types and the parent parsers every command shares."""

from __future__ import annotations

import argparse
import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Final, TypeVar

from searchsync.config import Settings
from searchsync.dlq.replay import parse_utc
from searchsync.duration import parse_duration
from searchsync.errors import InvalidRequest
from searchsync.exit_codes import ExitCode
from searchsync.kafka.admin import KAFKA_TIMEOUT_S
from searchsync.resources import Stores
from searchsync.runtime import Runtime

CONFIG_ENV: Final = "SEARCHSYNC_CONFIG"

Command = Callable[[argparse.Namespace, Settings, Runtime], ExitCode]  # each leaf's ``func``

T = TypeVar("T")


def command(
    commands: Any,
    name: str,
    func: Command,
    summary: str,
    *,
    json: str | None = "print one JSON document",
    one_type: bool = False,
    dry_run: str | None = None,
    plan: str | None = None,
    timeout: str | None = None,
    **options: Any,
) -> argparse.ArgumentParser:
    """``searchsync [GROUP] NAME``, which runs `func`: its parser, with ``--config PATH``,
    ``--json`` unless `json` (its help) is None, with `one_type` ``--type`` (`chosen_type`), and
    each of these given its help: `dry_run` a plain ``--dry-run``; `plan` ``--execute`` and
    ``--dry-run`` (``args.dry_run``), as kafka-consumer-groups has them: without ``--execute`` a
    command that changes state prints its plan and changes nothing; `timeout` ``--timeout
    SECONDS`` (``args.timeout``), how long what it names may take."""
    parser: argparse.ArgumentParser = commands.add_parser(name, help=summary, **options)
    parser.add_argument(
        "--config",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help=f"TOML settings file (default: ${CONFIG_ENV})",
    )
    if json is not None:
        parser.add_argument("--json", action="store_true", help=json)
    if one_type:
        parser.add_argument("--type", help="aggregate type (default: the only registered one)")
    if dry_run is not None:
        parser.add_argument("--dry-run", action="store_true", help=dry_run)
    if plan is not None:
        execute = ("--execute", False, "act; without it, only print the plan")
        switch(parser, "dry_run", execute, ("--dry-run", True, f"{plan} (default)"))
    if timeout is not None:
        parser.add_argument(
            "--timeout",
            type=seconds,
            default=KAFKA_TIMEOUT_S,
            metavar="SECONDS",
            help=f"how long {timeout} may take before the command gives up (default: "
            f"{KAFKA_TIMEOUT_S:g})",
        )
    parser.set_defaults(func=func)
    return parser


def group(commands: Any, name: str, summary: str) -> Any:
    return commands.add_parser(name, help=summary).add_subparsers(
        dest=f"{name}_command", required=True, metavar="COMMAND"
    )


def run_in(runtime: Runtime, work: Callable[[], Awaitable[T]]) -> T:
    async def go() -> T:
        async with runtime:
            return await work()

    return asyncio.run(go())


def with_tables(runtime: Runtime, use: Callable[[Stores], Awaitable[T]]) -> T:

    async def go() -> T:
        return await use(await runtime.tables())

    return run_in(runtime, go)


def switch(parser: argparse.ArgumentParser, dest: str, *flags: tuple[str, bool, str]) -> None:
    """Exclusive flags, each ``(flag, the value it sets, help)``, for ``args.<dest>``: True unless
    a flag sets False."""
    pair = parser.add_mutually_exclusive_group()
    for flag, value, about in flags:
        action = "store_true" if value else "store_false"
        pair.add_argument(flag, dest=dest, action=action, default=True, help=about)


def add_wait_switch(
    parser: argparse.ArgumentParser,
    wait: str = "finish once the live group committed past the load's watermark (default)",
    no_wait: str = "finish without checking the live group",
) -> None:
    flags = ("--wait-for-live-group", True, wait), ("--no-wait", False, no_wait)
    switch(parser, "wait_for_live", *flags)


def older_than(parser: argparse.ArgumentParser, window: str) -> None:
    parser.add_argument(
        "--older-than", required=True, type=duration, metavar="DURATION", help=window
    )


def chosen_type(runtime: Runtime, given: str | None) -> str:
    """The registered aggregate type ``--type`` names, or without one the only registered type;
    else `InvalidRequest` (exit 2) listing the registered types."""
    types = runtime.registry.types()
    if given is None:
        if len(types) == 1:
            return types[0]
        raise InvalidRequest(
            f"several aggregate types are registered, choose one with --type: {', '.join(types)}"
        )
    if given not in types:
        raise InvalidRequest(f"unknown aggregate type {given!r}; known: {', '.join(types)}")
    return given


def chosen_types(runtime: Runtime, given: Sequence[str] | str | None) -> list[str]:
    if not given:
        return list(runtime.registry.types())
    return [chosen_type(runtime, t) for t in ([given] if isinstance(given, str) else given)]


def _int_from(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
    return value


positive_int = partial(_int_from, low=1)
non_negative_int = partial(_int_from, low=0)


def number(ok: Callable[[float], bool], expected: str, nan: str = "") -> Callable[[str], float]:
    """An argument type for a number `ok` accepts; `expected` starts its error message (`nan`,
    when given, that of a text that is no number)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{nan or expected}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"{expected}, got {text!r}")
        return value

    return parse


seconds = number(lambda v: 0.0 < v <= 3600.0, "expected seconds above 0, at most 3600")
ratio = number(lambda v: 0.0 <= v <= 0.5, "expected a number in [0, 0.5]")  # soft delete, restore


def reset_target(text: str) -> str | int | datetime:
    """``earliest``, ``latest``, an offset, or an ISO-8601 time with a zone (``...T12:00:00Z``)."""
    if text in ("earliest", "latest"):
        return text
    if re.fullmatch(r"[0-9]{1,19}", text):
        return int(text)
    if re.match(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
        return utc_time(text)
    raise argparse.ArgumentTypeError(
        "expected earliest, latest, an offset >= 0 or a time like 2026-11-30T12:00:00Z,"
        f" got {text!r}"
    )


def utc_time(text: str) -> datetime:
    """An ISO-8601 time with a zone (`searchsync.dlq.replay.parse_utc`)."""
    try:
        return parse_utc(text)
    except InvalidRequest as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def duration(text: str) -> timedelta:
    """``7d``, ``36h``, ``90m``, ``45s`` or a sum like ``1d12h`` (`searchsync.duration`)."""
    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= timedelta(0):
        raise argparse.ArgumentTypeError(f"expected a duration above zero, got {text!r}")
    return value
