"""`searchsync index load --type T` (`searchsync.ops.load`): the initial load of the rows that exist
before searchsync. Exit 0 when the part is loaded (or was already), 1 when it stopped (resumable),
is still waiting for the live group, or rows could not be projected. A progress bar on a terminal
(stderr), else a progress line every ``load.progress_interval_s``; one summary line on stdout, or
with ``--json`` one JSON document."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from searchsync.cli.args import chosen_type, command, run_in, switch
from searchsync.cli.output import err, out, print_json
from searchsync.config import Settings
from searchsync.exit_codes import ExitCode
from searchsync.gc_tuning import tune_for_throughput
from searchsync.mysql.key_scope import check_where
from searchsync.ops.load.outcome import LoadOptions, LoadOutcome, parse_part
from searchsync.ops.rebuild.progress import Progress
from searchsync.runtime import Runtime


def register(cmds: Any) -> None:
    load = command(
        cmds,
        "load",
        cmd_index_load,
        "load the rows that exist in MySQL into the alias's index (the initial load)",
        one_type=True,
        dry_run="print the plan, change nothing",
        description="Watermark first, then a keyset scan written at each row's revision as the "
        "external version through the alias, while the live group runs: a live event always "
        "wins. Resumable (state in search_load_state); a finished load does nothing unless "
        "--again. docs/production.md, 'The initial load'.",
    )
    load.add_argument(
        "--part",
        metavar="I/N",
        default="0/1",
        help="load key range I of N (from 0; default 0/1: everything); run N processes, "
        "one per part, to load one table together",
    )
    load.add_argument(
        "--where",
        metavar="SQL",
        help="only rows matching this SQL condition on the type's table, e.g. \"id LIKE 'a%%'\""
        " (pasted into the query as written: one condition, no ';' or comments)",
    )
    load.add_argument("--again", action="store_true", help="load a finished load again")
    add_wait_switch(load)


def add_wait_switch(
    parser: argparse.ArgumentParser,
    wait: str = "finish once the live group committed past the load's watermark (default)",
    no_wait: str = "finish without checking the live group",
) -> None:
    flags = ("--wait-for-live-group", True, wait), ("--no-wait", False, no_wait)
    switch(parser, "wait_for_live", *flags)


def load_options(args: argparse.Namespace, aggregate_type: str) -> LoadOptions:
    """The `LoadOptions` of parsed ``index load`` arguments (`InvalidRequest` for a bad value)."""
    where = getattr(args, "where", None)  # `index init --load` has no --part, --where, --again
    return LoadOptions(
        aggregate_type,
        *parse_part(getattr(args, "part", "0/1")),
        None if where is None else check_where(where),
        getattr(args, "again", False),
        args.dry_run,
        args.wait_for_live,
    )


def cmd_index_load(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    options = load_options(args, chosen_type(runtime, args.type))
    tune_for_throughput()
    outcome = run_load(runtime, options)
    return report(outcome, outcome.summary() if args.json else None)


def run_load(runtime: Runtime, options: LoadOptions) -> LoadOutcome:
    """Run the load `options` asks for on `runtime`; progress on stderr."""
    interval_s = runtime.settings.load.progress_interval_s
    progress = Progress(stream=sys.stderr, interval_s=interval_s, label="load")

    async def go() -> LoadOutcome:
        return await (await runtime.loader(progress=progress)).run(options)

    return run_in(runtime, go)


def report(outcome: LoadOutcome, document: dict[str, Any] | None) -> ExitCode:
    """Print `document` (``--json``), else `outcome` for a person; exit 0 when it is ok, else 1."""
    if document is not None:
        print_json(document)
    else:
        line = outcome.message
        if outcome.rows_this_run:
            line += f" ({outcome.rows_per_s:.0f} rows/s over {outcome.seconds:.1f}s)"
        err(*(f"not indexed: {doc_id}: {why}" for doc_id, why in outcome.failures[:5]))
        (out if outcome.ok else err)(line)
    return ExitCode.OK if outcome.ok else ExitCode.FAILURE
