"""`searchsync config check`: validate the settings and print them, secrets redacted."""

from __future__ import annotations

import argparse
from typing import Any

import orjson

from consumer.cli.args import Parents
from consumer.cli.output import out, print_json
from consumer.cli.services import Services
from consumer.config import Settings
from consumer.exit_codes import ExitCode


def register(commands: Any, parents: Parents) -> None:
    group = commands.add_parser("config", help="check the configuration")
    config_cmds = group.add_subparsers(dest="config_command", required=True, metavar="COMMAND")
    check = config_cmds.add_parser(
        "check", parents=parents.data, help="validate and print the settings (redacted)"
    )
    check.set_defaults(func=cmd_config_check)


def cmd_config_check(args: argparse.Namespace, settings: Settings, services: Services) -> ExitCode:
    redacted = settings.redacted()
    if args.json:
        print_json(redacted)
        return ExitCode.OK
    for section, values in redacted.items():
        for key, value in values.items():
            out(f"{section}.{key} = {orjson.dumps(value, default=str).decode()}")
    out("config ok")
    return ExitCode.OK
