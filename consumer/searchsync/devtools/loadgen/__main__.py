"""``python -m searchsync.devtools.loadgen``: application traffic through the writer helper, for
demos and benchmarks (a development tool, not a `searchsync` command). It reads the settings, and
ends, as a `searchsync` command does (`searchsync.cli.main`)."""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from typing import Any, Final, TextIO

from searchsync.cli import main as run_command
from searchsync.cli.args import CONFIG_ENV, non_negative_int, positive_int, ratio
from searchsync.cli.output import show
from searchsync.config import Secret, Settings
from searchsync.devtools.loadgen import run_loadgen
from searchsync.exit_codes import ExitCode
from searchsync.mysql.pool import pool_of
from searchsync.runtime import Runtime
from searchsync.writer import PageWriter

APP_USER_ENV: Final = "APP_DB_USER"
APP_PASSWORD_ENV: Final = "APP_DB_PASSWORD"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m searchsync.devtools.loadgen",
        description="Write application traffic to MySQL through the writer helper (a dev tool).",
    )
    parser.add_argument("--config", metavar="PATH", help=f"TOML settings (default: ${CONFIG_ENV})")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--pages", type=positive_int, required=True)
    parser.add_argument("--updates", type=non_negative_int, required=True)
    parser.add_argument("--concurrency", type=positive_int, required=True)
    parser.add_argument("--delete-ratio", type=ratio, default=0.0, help="default: 0")
    parser.add_argument("--seed", type=int, default=0, help="default: 0")
    parser.add_argument("--id-prefix", help="page id prefix (default: a random one)")
    parser.add_argument(
        "--app-user", help=f"application MySQL user (default: ${APP_USER_ENV} or searchsync_app)"
    )
    parser.add_argument(
        "--app-password", help=f"its password (default: ${APP_PASSWORD_ENV} or searchsync_app)"
    )
    parser.set_defaults(func=cmd_loadgen)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(argv, parser=build_parser())


class Progress:
    """Calls of ``(done, total)`` drawn on `stream`: a bar redrawn with ``\\r`` on a TTY (at most
    every 0.1 s), else a line every `interval_s` seconds of `clock`; always the last."""

    def __init__(
        self,
        stream: TextIO,
        *,
        interval_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        width: int = 30,
    ) -> None:
        self._stream = stream
        self._tty = bool(getattr(stream, "isatty", lambda: False)())
        self._interval_s = 0.1 if self._tty else interval_s
        self._clock = clock
        self._width = width
        self._last_at: float | None = None

    def __call__(self, done: int, total: int) -> None:
        now = self._clock()
        finished = done >= total
        if not finished and self._last_at is not None and now - self._last_at < self._interval_s:
            return
        self._last_at = now
        percent = 100.0 * done / total if total else 100.0
        if self._tty:
            filled = int(self._width * done / total) if total else self._width
            bar = "#" * filled + "-" * (self._width - filled)
            end = "\n" if finished else ""
            self._stream.write(f"\rloadgen [{bar}] {done}/{total} {percent:5.1f}%{end}")
        else:
            self._stream.write(f"loadgen: {done}/{total} ({percent:.1f}%)\n")
        self._stream.flush()


def cmd_loadgen(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    user = args.app_user or os.environ.get(APP_USER_ENV) or "searchsync_app"
    password = args.app_password or os.environ.get(APP_PASSWORD_ENV) or "searchsync_app"
    prefix = args.id_prefix if args.id_prefix is not None else f"lg{secrets.token_hex(4)}-"
    app = replace(settings.mysql, user=user, password=Secret(password))

    async def go() -> Any:
        async with pool_of(app, maxsize=args.concurrency) as pool:
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

    report = asyncio.run(go())
    fields = asdict(report)  # the set of hard-deleted ids is printed sorted
    counts = {k: v for k, v in fields.items() if isinstance(v, int)} | {"changes": report.changes}
    document = counts | {"seed": args.seed, "id_prefix": prefix} | fields
    line = " ".join(f"{k}={v}" for k, v in counts.items()) + f" id_prefix={prefix}"
    return show(args.json, document, [line])


if __name__ == "__main__":
    sys.exit(main())
