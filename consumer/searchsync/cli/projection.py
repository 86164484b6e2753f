"""``searchsync projection show --type T --id X``: the document searchsync would write for one row
(`searchsync.ops.preview`), as JSON on stdout. Exit 0 with the document; 1 when there is none
(the row cannot be projected, or neither the row nor its revision floor exists), the reason on
stderr; 2 for an unknown type."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from searchsync.cli.args import chosen_type, command, group, with_tables
from searchsync.cli.output import err, print_json
from searchsync.config import Settings
from searchsync.exit_codes import ExitCode
from searchsync.ops.preview import preview
from searchsync.runtime import Runtime


def register(commands: Any) -> None:
    cmds = group(commands, "projection", "what a projector makes of a row")
    show = command(
        cmds,
        "show",
        cmd_projection_show,
        "print the document that would be written for one row (JSON)",
        json="print the document with its type, id, state and revision around it",
        one_type=True,
    )
    show.add_argument("--id", required=True, help="the row's id")


def cmd_projection_show(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    projector = runtime.registry.get(chosen_type(runtime, args.type))
    found = with_tables(runtime, lambda t: preview(projector, t.truth, args.id))
    if args.json:
        document = asdict(found)
        document["document"] = document.pop("body")
        print_json(document)
    elif found.body is not None:
        print_json(found.body)
    if not found.ok:
        err(f"{found.aggregate_type} {found.aggregate_id}: {found.state}: {found.reason}")
        return ExitCode.FAILURE
    return ExitCode.OK
