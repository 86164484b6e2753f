"""`searchsync config check`: validate the settings, load the projectors as `run` does and print
both, secrets redacted. ``--grants`` also checks as the configured MySQL user that no grant lets
the consumer write a business table (exit 1 if one does)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import orjson

from searchsync.cli.args import command, group
from searchsync.cli.output import err, out, print_json
from searchsync.config import Settings
from searchsync.exit_codes import ExitCode
from searchsync.projection.references import business_tables
from searchsync.runtime import Runtime


def register(commands: Any) -> None:
    cmds = group(commands, "config", "check the configuration")
    check = command(cmds, "check", cmd_config_check, "validate and print the settings (redacted)")
    check.add_argument(
        "--grants",
        action="store_true",
        help="also check that the MySQL user cannot write the business tables (connects)",
    )


def cmd_config_check(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    registry = runtime.registry  # a ConfigError (exit 2) when a projector cannot be loaded
    redacted: dict[str, Any] = dict(settings.redacted())
    redacted["registered_types"] = list(registry.types())
    report = None
    if args.grants:
        from searchsync.mysql.grants import check_grants
        from searchsync.mysql.pool import pool_of

        tables = list(business_tables(runtime.registry))

        async def go() -> Any:
            async with pool_of(settings.mysql, maxsize=1) as pool:
                return await check_grants(pool, settings.mysql.database, tables)

        report = asyncio.run(go())
        redacted["grants"] = {
            "tables": tables,
            "grants": list(report.grants),
            "violations": list(report.violations),
        }
    code = ExitCode.OK if report is None or report.ok else ExitCode.FAILURE
    if args.json:
        print_json(redacted)
        return code
    for section, values in settings.redacted().items():
        for key, value in values.items():
            out(f"{section}.{key} = {orjson.dumps(value, default=str).decode()}")
    out(f"registered types: {', '.join(registry.types())}")
    if report is not None:
        for grant in report.grants:
            out(f"grant: {grant}")
        for violation in report.violations:
            err(f"least privilege violated: {violation}")
        out("least privilege: ok" if report.ok else "least privilege: VIOLATED")
    out("config ok")
    return code
