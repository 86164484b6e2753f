"""The refusals of ``searchsync config check`` (`searchsync.ops.setup_check`): static ones always,
and with ``--connect`` those that need MySQL and the search engine."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from searchsync.cli.args import run_in
from searchsync.config import Settings
from searchsync.mysql.table_schema import MysqlTableSchema
from searchsync.ops import setup_check
from searchsync.projection.references import event_types
from searchsync.projection.topics import consumed_topics
from searchsync.runtime import Runtime


def findings(settings: Settings, runtime: Runtime, *, connect: bool) -> dict[str, Any]:
    """``{"topics": [...], "findings": [lines], "types": [per-type reports]}``."""
    registry = runtime.registry
    types = registry.types()
    found = setup_check.static_findings(settings, registry)
    reports: list[setup_check.TypeReport] = []
    if connect:

        async def go() -> None:
            tables = await runtime.tables()
            admin = runtime.search().admin
            prefix = settings.elasticsearch.index_prefix
            schema = MysqlTableSchema(await runtime.pool())
            for t in types:
                projector = registry.get(t)
                wrong = await setup_check.schema_findings(projector, schema)
                found.extend(wrong)
                if not wrong:  # a missing column would only fail the read
                    report = await setup_check.sample_report(projector, tables.truth)
                    reports.append(report)
                    found.extend(report.findings)
                found.extend(await setup_check.engine_findings(projector, admin, prefix))

        run_in(runtime, go)
    return {
        "topics": list(consumed_topics(settings, event_types(registry))),
        "findings": found,
        "types": [asdict(r) for r in reports],
        "sample_lines": list(setup_check.lines(reports)),
    }
