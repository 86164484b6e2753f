"""`searchsync index init|load|describe|list|rollback|drop`: the alias and its physical indices
(`searchsync.ops.indices`). ``index load --type T`` (`searchsync.ops.load`): the initial load of
the rows that exist before searchsync. Exit 0 when the part is loaded (or was already), 1 when it
stopped (resumable), is still waiting for the live group, or rows could not be projected. A
progress bar on a terminal (stderr), else a progress line every ``load.progress_interval_s``; one
summary line on stdout, or with ``--json`` one JSON document."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import asdict
from typing import Any, TypeVar

from searchsync.cli.args import add_wait_switch, chosen_type, chosen_types, command, group, run_in
from searchsync.cli.output import err, out, print_json, show
from searchsync.config import Settings
from searchsync.errors import InvalidRequest
from searchsync.exit_codes import ExitCode
from searchsync.gc_tuning import tune_for_throughput
from searchsync.mysql.key_scope import check_where
from searchsync.naming import physical_version, read_alias_name
from searchsync.ops import indices
from searchsync.ops.load.outcome import LoadOptions, LoadOutcome, parse_part
from searchsync.ops.rebuild.progress import Progress
from searchsync.runtime import Runtime
from searchsync.search.admin import InitAction, describe, init_index
from searchsync.search.port import IndexAdmin

T = TypeVar("T")

# one physical index in ``index list --json`` (print_json writes created_at as ISO 8601)
_INDEX_FIELDS = [
    "name",
    "version",
    "docs",
    "schema_version",
    "created_at",
    "aliased",
    "is_write_index",
    "read_aliased",
]

_MESSAGES = {
    "exists": "alias {alias} already exists (writes go to {index})",
    "read_alias_added": "added read alias {read} to {index}, where alias {alias} writes",
    "would_add_read_alias": "would add read alias {read} to {index}",
    "created": "created {index} behind alias {alias}",
    "alias_added": "added alias {alias} to existing {index}",
    "would_create": "would create {index} behind alias {alias}",
    "would_add_alias": "would add alias {alias} to existing {index}",
}


def register(commands: Any) -> None:
    cmds = group(commands, "index", "manage the Elasticsearch alias and index")
    about = "create <alias>_v1 behind the alias if missing"
    dry_run = "say what would be done"
    init = command(cmds, "init", cmd_index_init, about, one_type=True, dry_run=dry_run)
    init.add_argument(
        "--load",
        action="store_true",
        help="then load the rows that exist in MySQL into it (`index load` over the whole table)",
    )
    add_wait_switch(init)
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
    command(cmds, "describe", cmd_index_describe, "show where each alias points")
    listing = command(cmds, "list", cmd_index_list, "the physical indices behind each alias")
    listing.add_argument("--type", help="only this aggregate type (default: every type)")
    about = "swap the alias back to an earlier index"
    plan = "say what would be swapped"
    back = command(cmds, "rollback", cmd_index_rollback, about, one_type=True, plan=plan)
    back.add_argument(
        "--to", metavar="INDEX", help="the index to swap to (default: the one before)"
    )
    about = "delete an old physical index (never the alias's)"
    drop = command(cmds, "drop", cmd_index_drop, about, plan="say what would be deleted")
    drop.add_argument("index", metavar="INDEX", help="the physical index, <alias>_v<N>")


def _with_admin(runtime: Runtime, call: Callable[[IndexAdmin], Awaitable[T]]) -> T:
    return run_in(runtime, lambda: call(runtime.search().admin))


def _per_type(
    runtime: Runtime, call: Callable[[IndexAdmin, str], Awaitable[T]], types: Sequence[str]
) -> list[tuple[str, T]]:
    async def each(admin: IndexAdmin) -> list[T]:
        return [await call(admin, runtime.settings.alias(t)) for t in types]

    return list(zip(types, _with_admin(runtime, each), strict=True))


def cmd_index_init(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    aggregate_type = chosen_type(runtime, args.type)
    projector = runtime.registry.get(aggregate_type)
    alias = settings.alias(aggregate_type)
    mapping, version = projector.mapping, projector.schema_version
    result = _with_admin(
        runtime,
        lambda a: init_index(a, alias, mapping, dry_run=args.dry_run, schema_version=version),
    )
    message = _MESSAGES[result.action.value].format(
        alias=result.alias, index=result.index, read=read_alias_name(result.alias)
    )
    document = {**asdict(result), "action": result.action.value, "dry_run": args.dry_run}
    document["message"] = message
    if not args.load:
        return show(args.json, document, [message])
    if args.dry_run and result.action in (InitAction.WOULD_CREATE, InitAction.WOULD_ADD_ALIAS):
        then = f"then would load every row of {projector.table} into {result.index}"
        document |= {"load": None, "message": f"{message}; {then}"}
        return show(args.json, document, [message, then])
    if not args.json:
        err(message)
    outcome = run_load(runtime, load_options(args, aggregate_type))
    return report(outcome, {**document, "load": outcome.summary()} if args.json else None)


def cmd_index_describe(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    pairs = _per_type(runtime, describe, runtime.registry.types())

    def lines() -> Iterator[str]:
        for t, d in pairs:
            if not d.exists:
                yield f"{t}: alias {d.alias} does not exist ({_init_hint(t)})"
                continue
            yield f"{t}: alias {d.alias} -> {', '.join(d.indices)} (writes: {d.write_index})"
            yield f"{t}: read alias {d.read_alias} -> {', '.join(d.read_indices) or 'nothing'}"

    return show(args.json, [{"aggregate_type": t, **asdict(d)} for t, d in pairs], lines())


def cmd_index_list(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    pairs = _per_type(runtime, indices.list_alias, chosen_types(runtime, args.type))
    document = [
        {
            "aggregate_type": t,
            "alias": listing.alias,
            "read_alias": listing.read_alias,
            "write_index": None if listing.write_index is None else listing.write_index.name,
            "indices": [{k: getattr(row, k) for k in _INDEX_FIELDS} for row in listing.indices],
        }
        for t, listing in pairs
    ]
    return show(args.json, document, _listing_lines(pairs))


def _init_hint(aggregate_type: str) -> str:
    return f"run `searchsync index init --type {aggregate_type}`"


def _listing_lines(pairs: list[tuple[str, indices.AliasListing]]) -> Iterator[str]:
    for t, listing in pairs:
        if not listing.indices:
            yield f"{t}: no index behind alias {listing.alias} ({_init_hint(t)})"
            continue
        yield f"{t}: alias {listing.alias}, read alias {listing.read_alias}"
        yield f"  {'INDEX':<48} {'DOCS':>10} {'SCHEMA':>6}  {'CREATED':<25} ALIAS"
        for row in listing.indices:
            role = "write" if row.is_write_index else ("read" if row.aliased else "-")
            role += "+live" if row.read_aliased else ""
            schema = "-" if row.schema_version is None else str(row.schema_version)
            created = row.created_at.isoformat(timespec="seconds")
            yield f"  {row.name:<48} {row.docs:>10} {schema:>6}  {created:<25} {role}"


def cmd_index_rollback(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    alias = settings.alias(chosen_type(runtime, args.type))
    result = _with_admin(
        runtime, lambda a: indices.rollback(a, alias, to=args.to, dry_run=args.dry_run)
    )
    document = {
        "alias": result.alias,
        "from": result.from_index,
        "to": result.to_index,
        "from_schema_version": result.from_schema_version,
        "to_schema_version": result.to_schema_version,
        "dry_run": result.dry_run,
        "message": result.message,
    }
    return show(args.json, document, [result.message], plan=result.dry_run)


def cmd_index_drop(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    index: str = args.index
    aliases = [settings.alias(t) for t in runtime.registry.types()]
    alias = next((a for a in aliases if physical_version(a, index) is not None), None)
    if alias is None:
        raise InvalidRequest(
            f"{index} is not <alias>_v<N> of a known aggregate type (aliases: {', '.join(aliases)})"
        )
    result = _with_admin(runtime, lambda a: indices.drop(a, alias, index, dry_run=args.dry_run))
    document = {**asdict(result), "message": result.message}
    return show(args.json, document, [result.message], plan=result.dry_run)


def load_options(args: argparse.Namespace, aggregate_type: str) -> LoadOptions:
    """The `LoadOptions` of parsed ``index load`` arguments (`InvalidRequest` for a bad value)."""
    part, parts = parse_part(getattr(args, "part", "0/1"))
    where = getattr(args, "where", None)  # `index init --load` has no --part, --where, --again
    return LoadOptions(
        aggregate_type=aggregate_type,
        part=part,
        parts=parts,
        where=None if where is None else check_where(where),
        again=getattr(args, "again", False),
        dry_run=args.dry_run,
        wait_for_live=args.wait_for_live,
    )


def cmd_index_load(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    options = load_options(args, chosen_type(runtime, args.type))
    tune_for_throughput()
    outcome = run_load(runtime, options)
    return report(outcome, outcome.summary() if args.json else None)


def run_load(runtime: Runtime, options: LoadOptions) -> LoadOutcome:
    interval_s = runtime.settings.load.progress_interval_s
    progress = Progress(stream=sys.stderr, interval_s=interval_s, label="load")

    async def go() -> LoadOutcome:
        return await (await runtime.loader(progress=progress)).run(options)

    return run_in(runtime, go)


def report(outcome: LoadOutcome, document: dict[str, Any] | None) -> ExitCode:
    if document is not None:
        print_json(document)
    else:
        line = outcome.message
        if outcome.rows_this_run:
            line += f" ({outcome.rows_per_s:.0f} rows/s over {outcome.seconds:.1f}s)"
        err(*(f"not indexed: {doc_id}: {why}" for doc_id, why in outcome.failures[:5]))
        (out if outcome.ok else err)(line)
    return ExitCode.OK if outcome.ok else ExitCode.FAILURE
