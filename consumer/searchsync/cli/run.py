"""`searchsync run`: the consumer until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from searchsync.cli.args import command
from searchsync.cli.output import err
from searchsync.config import Settings
from searchsync.exit_codes import ExitCode
from searchsync.gc_tuning import tune_for_throughput
from searchsync.runtime import Runtime


def register(commands: Any) -> None:
    command(commands, "run", cmd_run, "run the consumer until stopped", data=False)


def cmd_run(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    """Run the consumer until SIGTERM/SIGINT; its exit code is the command's."""
    from searchsync.observability.logs import configure_logging

    try:
        import searchsync.app  # noqa: F401  # the pipeline: is it in this build?
    except ImportError as exc:
        err(f"error: the consumer is not available in this build ({exc})")
        return ExitCode.FAILURE
    configure_logging(settings.observability.log_level, secrets=settings.secret_values())
    tune_for_throughput()

    async def go() -> int:
        async with until_signalled() as stop, runtime:
            return await runtime.run_consumer(stop)

    return ExitCode(asyncio.run(go()))


@asynccontextmanager
async def until_signalled() -> AsyncIterator[asyncio.Event]:
    """An event that SIGTERM or SIGINT sets while the context is open."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        yield stop
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
