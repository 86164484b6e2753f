"""The ``searchsync`` command (console script ``searchsync.cli:main``): the command tree, Settings
loaded once (``--config`` or $SEARCHSYNC_CONFIG), each command run on a `searchsync.runtime.Runtime`
(tests pass fakes), errors mapped to exit codes (`searchsync.exit_codes`). With ``--json`` a
command prints exactly one JSON document on stdout; messages go to stderr."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from searchsync import __version__
from searchsync.cli import config, dlq, index, offsets, reconcile, retention, serve, status
from searchsync.cli.args import CONFIG_ENV, Command
from searchsync.cli.output import describe_unreachable, err
from searchsync.config import Settings, load_settings, scrub_credentials, scrub_known
from searchsync.errors import ConfigError, DlqBudgetExceeded, InvalidRequest, SearchSyncError
from searchsync.exit_codes import ExitCode
from searchsync.runtime import Runtime
from searchsync.search.client import describe_auth_error

_GROUPS = (
    serve.register,
    index.register,
    dlq.register,
    config.register,
    offsets.register,
    reconcile.register_rebuild,
    reconcile.register_repair,
    retention.register,
    serve.register_relay,
    status.register,
    serve.register_exporter,
    status.register_wait,
    config.register_schema,
    config.register_projection,
)


def main(
    argv: Sequence[str] | None = None,
    *,
    runtime: Callable[[Settings], Runtime] = Runtime,
    parser: argparse.ArgumentParser | None = None,
) -> int:
    """Run one command and return its exit code; `runtime` makes the command's services from the
    Settings (tests: fakes); `parser` (default: `build_parser`) gives ``func`` and ``config``."""
    parser = parser or build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else ExitCode.USAGE
    command: Command = args.func
    settings: Settings | None = None
    path = args.config if args.config is not None else os.environ.get(CONFIG_ENV)
    try:
        settings = load_settings(os.environ, Path(path) if path else None)
        return command(args, settings, runtime(settings))
    except ConfigError as exc:
        err(f"config error: {exc.key}: {exc.detail}")  # the cause first, then the expected form
        return ExitCode.USAGE
    except (InvalidRequest, DlqBudgetExceeded) as exc:
        usage = isinstance(exc, InvalidRequest)
        err(f"{'usage error' if usage else 'dlq budget exceeded'}: {exc}")
        return ExitCode.USAGE if usage else ExitCode.DLQ_BUDGET
    except KeyboardInterrupt:
        err("interrupted")
        return ExitCode.INTERRUPTED
    except Exception as exc:  # every other failure is operational: say what and exit 1
        text = str(exc) or type(exc).__name__
        if not isinstance(exc, SearchSyncError):
            text = f"{type(exc).__name__}: {text}"
        away = None if settings is None else describe_unreachable(exc, settings)
        text = scrub_credentials(away or describe_auth_error(exc) or text)
        err(f"error: {scrub_known(text, () if settings is None else settings.secret_values())}")
        return ExitCode.FAILURE


def build_parser() -> argparse.ArgumentParser:
    """The whole command tree; each leaf sets ``func(args, settings, runtime) -> ExitCode``."""
    parser = argparse.ArgumentParser(
        prog="searchsync",
        description="Keep Elasticsearch consistent with MySQL (outbox -> Kafka -> consumer).",
        epilog="exit codes: 0 ok, 1 operational failure, 2 usage/config error, "
        "3 DLQ budget exceeded, 4 status unhealthy, 130 interrupted",
    )
    parser.add_argument("--config", metavar="PATH", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--version", action="version", version=f"searchsync {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in _GROUPS:
        register(commands)
    return parser
