"""``searchsync config check``: what makes a setup wrong before any event arrives, each finding
one line that names the fix.

Without connecting (`static_findings`): the topics against the registered types, and a mapping
that is not ``dynamic: strict`` (unless the projector says ``dynamic_mapping=True``). Connected
(`connected_findings`): every projector's table, children and lookups against
``information_schema`` (missing tables and columns, a missing index the fan-out or a child's
read needs), one real
row of each type projected (a `build` field the mapping lacks, a row it cannot project), and the
mapping tried on the search engine in a throwaway index (a module the engine lacks)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from searchsync.config import Settings
from searchsync.errors import PoisonMessage
from searchsync.mysql.table_schema import TableSchema
from searchsync.mysql.truth import Truth
from searchsync.projection import Projector, ProjectorRegistry, through_child
from searchsync.projection.mapping import is_strict, mapping_gaps
from searchsync.projection.references import event_types
from searchsync.projection.topics import topic_problems
from searchsync.search.engine_modules import missing_module
from searchsync.search.port import IndexAdmin


@dataclass(slots=True)
class TypeReport:
    """What the connected check saw of one type: a sample row projected, or why not."""

    aggregate_type: str
    sample_id: str | None = None
    empty: bool = False
    findings: list[str] = field(default_factory=list)


def static_findings(settings: Settings, registry: ProjectorRegistry) -> list[str]:
    """The topics and mapping findings that need no connection."""
    found = topic_problems(settings, event_types(registry))
    for t in registry.types():
        projector = registry.get(t)
        if not projector.dynamic_mapping and not is_strict(projector.mapping):
            found.append(
                f"mapping of {t} is not dynamic: strict (a field it lacks would be added"
                ' silently): set "dynamic": "strict" at the root of its mappings, or'
                " Projector(dynamic_mapping=True)"
            )
    return found


async def schema_findings(projector: Projector, schema: TableSchema) -> list[str]:
    """Missing tables and columns of `projector`'s reads, and missing fan-out indexes."""
    wanted: list[tuple[str, str, Sequence[str]]] = [
        ("table", projector.table, projector.columns),
        *((f"child {c.name!r}", c.table, c.columns) for c in projector.children),
        *((f"lookup {lk.name!r}", lk.table, lk.columns) for lk in projector.lookups),
    ]
    have = await schema.columns([table for _, table, _ in wanted])
    t = projector.aggregate_type
    found: list[str] = []
    for what, table, columns in wanted:
        if table not in have:
            found.append(
                f"{t}: {what} {table} does not exist in the database: create it, or fix the"
                " projector's table name"
            )
        elif missing := [c for c in columns if c not in have[table]]:
            found.append(
                f"{t}: {what} {table} has no column {', '.join(missing)}: add it to the table,"
                " or remove it from the projector's columns"
            )
    for child in projector.children:
        if child.table in have and not await _indexed(schema, child.table, (child.key,)):
            found.append(
                f"{t}: child {child.name!r} is read by {child.key}, but no index of"
                f" {child.table} starts with it: add one (every batch would scan the table)"
            )
    for lookup in projector.lookups:
        if lookup.aggregate_type is None:
            continue
        through = through_child(lookup, projector.children)
        table, key = (projector.table, "id") if through is None else (through.table, through.key)
        if table in have and not await _indexed(schema, table, (lookup.via, key)):
            found.append(
                f"{t}: the fan-out from {lookup.aggregate_type} needs an index on {table}"
                f" starting with ({lookup.via}, {key}): add one (e.g. named"
                f" {table}_{lookup.via}_fanout)"
            )
    return found


async def _indexed(schema: TableSchema, table: str, columns: tuple[str, ...]) -> bool:
    return any(index[: len(columns)] == columns for index in await schema.indexes(table))


async def sample_report(projector: Projector, truth: Truth) -> TypeReport:
    """One real row of the type projected (the first by id), or that the table is empty."""
    t = projector.aggregate_type
    rows = await truth.scan(projector, None, 1)
    if not rows:
        return TypeReport(t, empty=True)
    report = TypeReport(t, str(rows[0].get("id")))
    try:
        document = projector.project(rows[0])
    except PoisonMessage as exc:
        report.findings.append(
            f"{t}: row {report.sample_id} cannot be projected: {exc.message}: fix build() or"
            " the row (`searchsync projection show` prints it)"
        )
        return report
    if gaps := mapping_gaps(projector.mapping, document.body):
        report.findings.append(
            f"{t}: build() returns {', '.join(gaps)}, which the mapping lacks: add"
            f" {'them' if len(gaps) > 1 else 'it'} to the mapping's properties"
        )
    return report


async def engine_findings(projector: Projector, admin: IndexAdmin, prefix: str) -> list[str]:
    """The mapping tried in a throwaway index (created, then deleted): a module the engine lacks
    or another refusal, as one line."""
    name = f"{prefix}__check_{projector.aggregate_type}_{secrets.token_hex(4)}"
    try:
        await admin.create_index(name, projector.mapping)
    except Exception as exc:  # the engine's refusal is the finding
        text = str(exc)
        lacking = missing_module(text)
        first = text.splitlines()[0] if text else type(exc).__name__
        why = lacking or f"the search engine refuses its mapping ({first}): fix the mapping"
        return [f"{projector.aggregate_type}: {why}"]
    await admin.delete_index(name)
    return []


def lines(reports: Sequence[TypeReport]) -> Iterator[str]:
    """The sample lines of the connected check (what it projected)."""
    for report in reports:
        if report.empty:
            yield f"{report.aggregate_type}: table is empty: no row projected"
        elif report.sample_id is not None and not report.findings:
            yield f"{report.aggregate_type}: row {report.sample_id} projects"
