"""`searchsync index init` and `searchsync index describe`: the alias and its physical index."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from consumer.cli.args import Parents
from consumer.cli.output import out, print_json
from consumer.cli.services import Services
from consumer.config import Settings
from consumer.errors import InvalidRequest
from consumer.exit_codes import ExitCode
from consumer.search.admin import InitResult, describe, init_index

T = TypeVar("T")

_MESSAGES = {
    "exists": "alias {alias} already exists (writes go to {index})",
    "created": "created {index} behind alias {alias}",
    "alias_added": "added alias {alias} to existing {index}",
    "would_create": "would create {index} behind alias {alias}",
    "would_add_alias": "would add alias {alias} to existing {index}",
}


def register(commands: Any, parents: Parents) -> None:
    index = commands.add_parser("index", help="manage the Elasticsearch alias and index")
    index_cmds = index.add_subparsers(dest="index_command", required=True, metavar="COMMAND")
    init = index_cmds.add_parser(
        "init", parents=parents.data, help="create <alias>_v1 behind the alias if missing"
    )
    init.add_argument("--type", default="wiki_page", help="aggregate type (default: wiki_page)")
    init.add_argument("--dry-run", action="store_true", help="say what would be done")
    init.set_defaults(func=cmd_index_init)
    show = index_cmds.add_parser(
        "describe", parents=parents.data, help="show where each alias points"
    )
    show.set_defaults(func=cmd_index_describe)


def _with_client(services: Services, settings: Settings, work: Callable[[Any], Awaitable[T]]) -> T:
    async def go() -> T:
        client = services.es_client(settings)
        try:
            return await work(client)
        finally:
            await client.close()

    return asyncio.run(go())


def cmd_index_init(args: argparse.Namespace, settings: Settings, services: Services) -> ExitCode:
    registry = services.registry(settings)
    if args.type not in registry.types():
        raise InvalidRequest(f"unknown aggregate type {args.type!r}; known: {registry.types()}")
    projector = registry.get(args.type)
    alias = settings.alias(args.type)

    def work(client: Any) -> Awaitable[InitResult]:
        return init_index(
            services.index_admin(client),
            alias,
            projector.mapping,
            dry_run=args.dry_run,
            schema_version=projector.schema_version,
        )

    result = _with_client(services, settings, work)
    message = _MESSAGES[result.action.value].format(alias=result.alias, index=result.index)
    if args.json:
        print_json(
            {
                "alias": result.alias,
                "index": result.index,
                "action": result.action.value,
                "dry_run": args.dry_run,
                "message": message,
            }
        )
    else:
        out(message)
    return ExitCode.OK


def cmd_index_describe(
    args: argparse.Namespace, settings: Settings, services: Services
) -> ExitCode:
    types = services.registry(settings).types()

    async def work(client: Any) -> list[Any]:
        admin = services.index_admin(client)
        return [await describe(admin, settings.alias(t)) for t in types]

    found = _with_client(services, settings, work)
    if args.json:
        print_json(
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
        return ExitCode.OK
    for t, d in zip(types, found, strict=True):
        if not d.exists:
            out(f"{t}: alias {d.alias} does not exist (run `searchsync index init --type {t}`)")
        else:
            out(f"{t}: alias {d.alias} -> {', '.join(d.indices)} (writes: {d.write_index})")
    return ExitCode.OK
