"""`Truth` over rows and revision floors a test puts in; no SQL anywhere."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from searchsync.mysql.key_scope import KeyScope
from searchsync.mysql.truth import TruthEntry
from searchsync.mysql.truth_buckets import entry_of_row
from searchsync.projection import (
    Child,
    Lookup,
    Projector,
    Row,
    attach_steps,
    lookup_keys,
    sync_hash,
)
from searchsync.types import BucketCursor

__all__ = ["FakeTruth", "attach"]


def attach(
    roots: Iterable[dict[str, Any]],
    children: Sequence[tuple[Child, Iterable[Row]]],
    lookups: Sequence[tuple[Lookup, Iterable[Row]]],
) -> None:
    """`attach_steps` run to the end."""
    for _ in attach_steps(list(roots), children, lookups):
        pass


class FakeTruth:
    """Rows are kept per table and ordered by Python's string order (ids in tests are ASCII, so
    it is the database's too). `primary_tables` lets a test model a lagging replica:
    ``primary=True`` reads them first, then `tables`. `calls` records each `rows_by_id`'s ids and
    `primary` flag; `pages` counts `bucket_page` calls.

    A projector's children and lookups are attached like `MysqlTruth` does: lookup rows are rows
    of `tables` (by id), child rows are kept in `child_tables` (`put_child`); a lookup through a
    child reads the via values of the child rows the batch read. Each batch reads
    them with one "query" per table, counted in `relation_reads`, and hands them to `attach` in
    the reverse of the order they were put in (a database's order is no promise either)."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, Row]] = {}
        self.primary_tables: dict[str, dict[str, Row]] = {}
        self.child_tables: dict[str, list[Row]] = {}
        self.floors: dict[tuple[str, str], int] = {}
        self.calls: list[tuple[tuple[str, ...], bool]] = []
        self.relation_reads: list[str] = []
        self.pages = 0

    def put(self, row: Mapping[str, Any], *, table: str, primary_only: bool = False) -> None:
        """Store `row` under ``row["id"]`` in `table` (replacing any earlier row of that id)."""
        target = self.primary_tables if primary_only else self.tables
        target.setdefault(table, {})[str(row["id"])] = dict(row)

    def remove(self, row_id: str, *, table: str) -> None:
        self.tables.get(table, {}).pop(row_id, None)
        self.primary_tables.get(table, {}).pop(row_id, None)

    def put_child(self, row: Mapping[str, Any], *, table: str) -> None:
        """Add one row to the child table `table`."""
        self.child_tables.setdefault(table, []).append(dict(row))

    def remove_children(self, table: str, key: str, value: str) -> None:
        """Delete the rows of child table `table` whose `key` is `value`."""
        rows = self.child_tables.get(table, [])
        rows[:] = [r for r in rows if str(r[key]) != value]

    def _relate(self, projector: Projector, roots: list[dict[str, Any]]) -> None:
        if not roots or not (projector.children or projector.lookups):
            return
        ids = {str(r["id"]) for r in roots}
        children = []
        for child in projector.children:
            self.relation_reads.append(child.table)
            rows = self.child_tables.get(child.table, [])
            found = [{c: r[c] for c in child.columns} for r in rows if str(r[child.key]) in ids]
            children.append((child, found[::-1]))
        lookups = []
        for lookup in projector.lookups:
            self.relation_reads.append(lookup.table)
            wanted = {str(k) for k in lookup_keys(lookup, roots, children)}
            table = self.tables.get(lookup.table, {})
            found = [{c: table[i][c] for c in lookup.columns} for i in wanted if i in table]
            lookups.append((lookup, found))
        attach(roots, children, lookups)

    def put_floor(self, aggregate_type: str, aggregate_id: str, revision: int) -> None:
        self.floors[(aggregate_type, aggregate_id)] = revision

    async def rows_by_id(
        self, projector: Projector, ids: Sequence[str], *, primary: bool = False
    ) -> dict[str, Row]:
        unique = _unique(ids)
        self.calls.append((tuple(unique), primary))
        rows = self.tables.get(projector.table, {})
        primary_rows = self.primary_tables.get(projector.table, {})
        found: dict[str, dict[str, Any]] = {}
        for row_id in unique:
            row = primary_rows.get(row_id) if primary else None
            if row is None:
                row = rows.get(row_id)
            if row is not None:
                found[row_id] = _columns(row, projector)
        self._relate(projector, list(found.values()))
        return {i: row for i, row in found.items()}

    async def revision_floors(
        self, aggregate_type: str, ids: Sequence[str], *, primary: bool = False
    ) -> dict[str, int]:
        floors = ((i, self.floors.get((aggregate_type, i))) for i in _unique(ids))
        return {i: revision for i, revision in floors if revision is not None}

    async def scan(
        self,
        projector: Projector,
        after_id: str | None,
        limit: int,
        *,
        scope: KeyScope | None = None,
    ) -> list[Row]:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        rows = self.tables.get(projector.table, {})
        ids = _in_scope(sorted(i for i in rows if after_id is None or i > after_id), scope)
        page = [_columns(rows[i], projector) for i in ids[:limit]]
        self._relate(projector, page)
        return list(page)

    async def floor_page(
        self, aggregate_type: str, after_id: str | None, limit: int
    ) -> list[tuple[str, int]]:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        ids = sorted(i for t, i in self.floors if t == aggregate_type and i > (after_id or ""))
        return [(i, self.floors[(aggregate_type, i)]) for i in ids[:limit]]

    async def count(self, projector: Projector, scope: KeyScope | None = None) -> int:
        return len(_in_scope(list(self.tables.get(projector.table, {})), scope))

    async def split_keys(self, projector: Projector, parts: int, where: str | None) -> list[str]:
        ids = _in_scope(sorted(self.tables.get(projector.table, {})), KeyScope(where=where))
        step = -(-len(ids) // parts)
        keys = [ids[k * step - 1] for k in range(1, parts) if step and k * step <= len(ids)]
        return keys + [keys[-1] if keys else ""] * (parts - 1 - len(keys))

    async def bucket_page(
        self,
        projector: Projector,
        lo: int,
        hi: int,
        after: BucketCursor | None,
        limit: int,
        *,
        content: bool,
        purged_before: datetime | None = None,
    ) -> list[TruthEntry]:
        """Keyset by id, the bucket key computed per row (as MySQL without ``sync_hash``)."""
        self.pages += 1
        rows = self.tables.get(projector.table, {})
        ids = sorted(
            i
            for i in rows
            if (after is None or i > after[1]) and lo <= sync_hash(projector.aggregate_type, i) < hi
        )
        page = [_columns(rows[i], projector) for i in ids[:limit]]
        if content:
            self._relate(projector, page)
        return [entry_of_row(r, content=content, purged_before=purged_before) for r in page]


def _columns(row: Row, projector: Projector) -> dict[str, Any]:
    """`row` as the database would return it for the projector's columns."""
    return {c: row[c] for c in projector.columns if c in row}


def _unique(ids: Sequence[str]) -> list[str]:
    if isinstance(ids, str):
        raise TypeError("ids must be a sequence of ids, not one string")
    return list(dict.fromkeys(ids))


def _in_scope(ids: list[str], scope: KeyScope | None) -> list[str]:
    """`ids` within `scope`'s key range; a where condition is read as ``id LIKE '<prefix>%'``,
    the only form the fake understands."""
    if scope is None:
        return ids
    prefix = ""
    if scope.where is not None:
        match = re.fullmatch(r"id LIKE '([^'%]*)%'", scope.where)
        if match is None:
            raise NotImplementedError(f"the fake truth reads no where like {scope.where!r}")
        prefix = match[1]
    return [
        i
        for i in ids
        if (scope.low is None or i > scope.low)
        and (scope.high is None or i <= scope.high)
        and i.startswith(prefix)
    ]
