"""`searchsync loadgen`: application traffic through the writer helper (a dev tool)."""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Final, TextIO

from searchsync.cli.args import Parents, non_negative_int, positive_int, ratio
from searchsync.cli.output import show
from searchsync.config import Settings
from searchsync.exit_codes import ExitCode
from searchsync.runtime import Runtime

APP_USER_ENV: Final = "SEARCHSYNC_APP_MYSQL_USER"
APP_PASSWORD_ENV: Final = "SEARCHSYNC_APP_MYSQL_PASSWORD"


def register(commands: Any, parents: Parents) -> None:
    loadgen = commands.add_parser(
        "loadgen", parents=parents.data, help="write application traffic to MySQL"
    )
    loadgen.add_argument("--pages", type=positive_int, required=True)
    loadgen.add_argument("--updates", type=non_negative_int, required=True)
    loadgen.add_argument("--concurrency", type=positive_int, required=True)
    loadgen.add_argument("--delete-ratio", type=ratio, default=0.0, help="default: 0")
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


def cmd_loadgen(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    from searchsync.devtools.loadgen import run_loadgen
    from searchsync.mysql.pool import create_pool, tls_context
    from searchsync.writer import PageWriter

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
            tls=tls_context(mysql),
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
    counts = {k: v for k, v in asdict(report).items() if isinstance(v, int)}
    counts["changes"] = report.changes
    document = {
        **counts,
        "seed": args.seed,
        "id_prefix": prefix,
        "final_revisions": report.final_revisions,
        "final_deleted": report.final_deleted,
        "hard_deleted_ids": sorted(report.hard_deleted_ids),
    }
    show(
        args.json,
        document,
        [" ".join(f"{k}={v}" for k, v in counts.items()) + f" id_prefix={prefix}"],
    )
    return ExitCode.OK
