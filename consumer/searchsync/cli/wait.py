"""`searchsync wait`: read-your-writes from a shell (library: `searchsync.read`). Exit 0 when the
document reached the revision (indexed, or with ``--searchable`` searchable), 1 when the timeout
passed first; either way the last revision seen is printed."""

from __future__ import annotations

import argparse
from typing import Any

from searchsync.cli.args import chosen_type, command, positive_int, run_in
from searchsync.cli.output import show
from searchsync.config import Settings
from searchsync.exit_codes import ExitCode
from searchsync.read import Until, wait_for_revision
from searchsync.runtime import Runtime


def register(commands: Any) -> None:
    about = "wait until a revision of a document is indexed (or searchable)"
    wait = command(commands, "wait", cmd_wait, about, one_type=True)
    wait.add_argument("--id", required=True, dest="doc_id", help="the document (aggregate) id")
    wait.add_argument(
        "--revision", required=True, type=positive_int, help="the revision the write returned"
    )
    wait.add_argument(
        "--searchable",
        action="store_true",
        help="wait until a search sees it (default: until a get by id does)",
    )
    wait.add_argument(
        "--timeout", type=_seconds, default=10.0, metavar="S", help="seconds (default: 10)"
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text!r}")
    return value


def cmd_wait(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    aggregate_type = chosen_type(runtime, args.type)

    result = run_in(
        runtime,
        lambda: wait_for_revision(
            runtime.search().searcher,
            settings.alias(aggregate_type),
            args.doc_id,
            args.revision,
            until=Until.SEARCHABLE if args.searchable else Until.INDEXED,
            timeout_s=args.timeout,
        ),
    )
    show(args.json, result.as_json(), [result.message])
    return ExitCode.OK if result.reached else ExitCode.FAILURE
