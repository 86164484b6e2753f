"""The truth port's read of a projector's children and lookups for a batch of roots: one ``IN
(...)`` query per child or lookup table per batch, in the roots' transaction (READ COMMITTED: a
child may be newer than its root; that newer event converges the document), attached and ordered
by `searchsync.projection.attach`. A child table whose values are all ints and strings (learned
per `Packing`, `_learn`) is read packed: one ``JSON_ARRAYAGG`` row orjson decodes in C, read again
as rows when cut short or not exactly ``COUNT(*)`` rows."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Final

import aiomysql
import orjson

from searchsync.mysql.column_types import ColumnTypes
from searchsync.mysql.pool import dialect_of, expand_in, quote_identifier, translate_errors
from searchsync.projection import Child, Lookup, Projector, Row, attach_steps, lookup_keys

_PIECE: Final = 256
"""Rows parsed between two turns of the event loop (a few milliseconds of CPU)."""
PACKED_MAX: Final = 16 * 1024 * 1024


Packing = dict[Child, bool]
"""Per child declaration: read packed (True), as rows (False), or not known yet (absent)."""


async def read_relations(
    conn: Any,
    projector: Projector,
    roots: Sequence[dict[str, Any]],
    packing: Packing,
    types: ColumnTypes | None = None,
) -> None:
    """Attach to each of `roots` (in place) its children and lookups, read on `conn` (their
    values read by `types`, `searchsync.mysql.column_types`)."""
    if not roots or not (projector.children or projector.lookups):
        return
    ids = list(dict.fromkeys(map(projector.key_of, roots)))
    children = [(c, await _children(conn, c, ids, packing, types)) for c in projector.children]
    lookups: list[tuple[Lookup, list[Row]]] = []
    for lookup in projector.lookups:  # after the children: a lookup may read through one
        keys = lookup_keys(lookup, roots, children)
        rows = await _read(conn, lookup.table, lookup.columns, "id", keys, types) if keys else []
        lookups.append((lookup, rows))
    for _ in attach_steps(roots, children, lookups, key=projector.id_column):
        await asyncio.sleep(0)  # a turn of the loop between slices: a bulk's answer waits less


async def _children(
    conn: Any, child: Child, ids: list[str], packing: Packing, types: ColumnTypes | None
) -> list[Row]:
    known = packing.get(child)
    if known:
        packed = await _read_packed(conn, child, ids)
        if packed is not None:
            return packed
    rows = await _read(conn, child.table, child.columns, child.key, ids, types)
    if known is None and _may_pack(child, rows):
        learnt = await _learn(conn, child, ids)
        if learnt is not None:
            packing[child] = learnt
    return rows


def _may_pack(child: Child, rows: list[Row]) -> bool:
    """Every value an int or a str, and every column seen with a value."""
    seen: set[str] = set()
    for row in rows:
        for column, value in row.items():
            if value is None:
                continue
            if value.__class__ is not int and value.__class__ is not str:
                return False
            seen.add(column)
    return len(seen) == len(child.columns)


async def _learn(conn: Any, child: Child, ids: list[str]) -> bool | None:
    """True when every child row of `ids` equals its own ``JSON_OBJECT`` decoded, type and value
    (one statement: the same row version); None when there are none now."""
    select, table, key = _quoted(child.columns, child.table, child.key)
    sql = f"SELECT {select}, {_json_object(child)} FROM {table} WHERE {key} IN %s"
    fetched = await read_rows(conn, expand_in(sql, len(ids)), tuple(ids), f"read {child.table}")
    if not fetched:
        return None
    columns, rows = child.columns, (list(row.values()) for row in fetched)
    return all(_same_row(dict(zip(columns, v[:-1], strict=True)), v[-1]) for v in rows)


def _same_row(row: dict[str, Any], packed: object) -> bool:
    """`packed` (a row's ``JSON_OBJECT`` text) decodes to exactly `row`, types included."""
    try:
        decoded = orjson.loads(packed) if isinstance(packed, str | bytes) else None
    except orjson.JSONDecodeError:
        return False
    if not isinstance(decoded, dict):
        return False
    # rows of ints, strings and None: repr tells their types and values apart (keys sorted:
    # the server may order an object's keys its own way)
    return repr(sorted(decoded.items())) == repr(sorted(row.items()))


def _json_object(child: Child) -> str:
    """``JSON_OBJECT('c1', `c1`, ...)`` of the child's columns (validated identifiers)."""
    pairs = ", ".join(f"'{c}', {quote_identifier(c)}" for c in child.columns)
    return f"JSON_OBJECT({pairs})"


def _quoted(columns: tuple[str, ...], table: str, key: str) -> tuple[str, str, str]:
    """The column list, the table and the key column, quoted (validated identifiers)."""
    return ", ".join(map(quote_identifier, columns)), quote_identifier(table), quote_identifier(key)


async def _read_packed(conn: Any, child: Child, ids: list[str]) -> list[Row] | None:
    """The child rows of `ids` read packed, or None when the packed text is unusable."""
    _, table, key = _quoted(child.columns, child.table, child.key)
    sql = dialect_of(conn).select(
        f"SELECT COUNT(*), JSON_ARRAYAGG({_json_object(child)}) FROM {table} WHERE {key} IN %s",
        group_concat_max_len=PACKED_MAX,
    )
    with translate_errors(f"read {child.table}"):
        async with conn.cursor() as cur:
            await cur.execute(expand_in(sql, len(ids)), tuple(ids))
            count, text = await cur.fetchone()
    if not count:
        return []
    try:
        values = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(values, list) or len(values) != count:
        return None
    width = len(child.columns)  # every row an object with the columns' keys (no others)
    if not all(v.__class__ is dict and len(v) == width for v in values):
        return None
    return values


async def _read(
    conn: Any,
    table: str,
    columns: tuple[str, ...],
    key: str,
    values: Sequence[Any],
    types: ColumnTypes | None,
) -> list[Row]:
    select, quoted, column = _quoted(columns, table, key)
    sql = expand_in(f"SELECT {select} FROM {quoted} WHERE {column} IN %s", len(values))
    return list(await read_rows(conn, sql, tuple(values), f"read {table}", types=types))


async def read_rows(
    conn: Any,
    sql: str,
    args: Sequence[Any],
    doing: str,
    piece: int = _PIECE,
    *,
    types: ColumnTypes | None = None,
) -> list[dict[str, Any]]:
    """The rows of `sql` as dicts, unbuffered and `piece` at a time with a turn of the event loop
    between: parsing thousands of rows at once would hold it for tens of milliseconds. With
    `types`, values are read by `searchsync.mysql.column_types`."""
    rows: list[dict[str, Any]] = []
    with translate_errors(doing):
        async with conn.cursor(aiomysql.SSDictCursor) as cur:
            await cur.execute(sql, args)
            while found := await cur.fetchmany(piece):
                if types is not None:
                    types.apply(cur.description, found)
                rows.extend(found)
                await asyncio.sleep(0)
    return rows
