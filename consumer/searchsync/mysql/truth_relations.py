"""The truth port's read of a projector's children and lookups for a batch of root rows.

One ``SELECT <columns> FROM <table> WHERE <key> IN (...)`` per child table and one
``... WHERE id IN (...)`` per lookup table, for the whole batch, on the connection (and so in the
transaction, one snapshot) the roots were read in; never a query per root. The rows are attached
to the roots by `searchsync.projection.attach`, which orders them itself: the order MySQL returns
them in never reaches ``build``.

Child rows are many (an article's five tags are five times its rows), and aiomysql parses each in
Python, so a child table whose values are all ints and strings is read packed: the same query as
one row, ``COUNT(*)`` and a ``JSON_ARRAYAGG`` of the rows, decoded in C (`_packed_sql`). Which
tables qualify is learned per `Packing` (one per `MysqlTruth`): the first batch of a child table
whose every column shows a value is read both ways, and the table is read packed from then on
only if both gave equal rows (a DATETIME, DECIMAL, float, binary or JSON column never does). A
packed result that is cut short (it reached ``group_concat_max_len``) or does not hold exactly
``COUNT(*)`` rows is read again as rows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Final

import aiomysql
import orjson

from searchsync.mysql.pool import expand_in, quote_identifier, translate_errors
from searchsync.projection import Child, Lookup, Projector, Row, attach, lookup_keys

__all__ = ["Packing", "read_relations"]

_PIECE: Final = 256
"""Rows parsed between two turns of the event loop (a few milliseconds of CPU)."""
_PACKED_MAX: Final = 16 * 1024 * 1024


class Packing:
    """Which child tables are read packed (learned, see the module docstring): per child
    declaration, True (packed), False (rows), absent (not known yet)."""

    def __init__(self) -> None:
        self.packed: dict[Child, bool] = {}


async def read_relations(
    conn: Any, projector: Projector, roots: Sequence[dict[str, Any]], packing: Packing
) -> None:
    """Attach to each of `roots` (rows of `projector.table`, in place) its children and lookups,
    read on `conn`: one query per child and per lookup table for all of `roots` (two for a child
    table the first time `packing` learns about it)."""
    if not roots or not (projector.children or projector.lookups):
        return
    ids = list(dict.fromkeys(str(r["id"]) for r in roots))
    children: list[tuple[Child, list[Row]]] = []
    for child in projector.children:
        children.append((child, await _children(conn, child, ids, packing)))
    lookups: list[tuple[Lookup, list[Row]]] = []
    for lookup in projector.lookups:  # after the children: a lookup may read through one
        keys = lookup_keys(lookup, roots, children)
        rows = await _read(conn, lookup.table, lookup.columns, "id", keys) if keys else []
        lookups.append((lookup, rows))
    attach(roots, children, lookups)


async def _children(conn: Any, child: Child, ids: list[str], packing: Packing) -> list[Row]:
    known = packing.packed.get(child)
    if known:
        packed = await _read_packed(conn, child, ids)
        if packed is not None:
            return packed
    rows = await _read(conn, child.table, child.columns, child.key, ids)
    if known is None and _may_pack(child, rows):
        packing.packed[child] = _same(await _read_packed(conn, child, ids), rows)
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


def _same(packed: list[Row] | None, rows: list[Row]) -> bool:
    if packed is None or len(packed) != len(rows):
        return False
    key = repr  # rows of ints, strings and None: repr tells their types and values apart
    return sorted(map(key, map(dict, packed))) == sorted(map(key, map(dict, rows)))


def _packed_sql(child: Child) -> str:
    select, table, key = _quoted(child.columns, child.table, child.key)
    return (
        f"SET STATEMENT group_concat_max_len = {_PACKED_MAX} FOR"
        f" SELECT COUNT(*), JSON_ARRAYAGG(JSON_ARRAY({select})) FROM {table} WHERE {key} IN %s"
    )


def _quoted(columns: tuple[str, ...], table: str, key: str) -> tuple[str, str, str]:
    """The column list, the table and the key column, quoted (validated identifiers)."""
    return ", ".join(map(quote_identifier, columns)), quote_identifier(table), quote_identifier(key)


async def _read_packed(conn: Any, child: Child, ids: list[str]) -> list[Row] | None:
    """The child rows of `ids` read packed, or None when the packed text is unusable."""
    with translate_errors(f"read {child.table}"):
        async with conn.cursor() as cur:
            await cur.execute(expand_in(_packed_sql(child), len(ids)), tuple(ids))
            count, text = await cur.fetchone()
    if not count:
        return []
    try:
        values = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(values, list) or len(values) != count:
        return None
    columns = child.columns
    if not all(isinstance(v, list) and len(v) == len(columns) for v in values):
        return None
    return [dict(zip(columns, v, strict=True)) for v in values]


async def _read(
    conn: Any, table: str, columns: tuple[str, ...], key: str, values: Sequence[Any]
) -> list[Row]:
    select, quoted, column = _quoted(columns, table, key)
    sql = f"SELECT {select} FROM {quoted} WHERE {column} IN %s"
    rows: list[Row] = []
    with translate_errors(f"read {table}"):
        # Unbuffered, in pieces: a batch's children may be many rows, parsed in Python.
        async with conn.cursor(aiomysql.SSDictCursor) as cur:
            await cur.execute(expand_in(sql, len(values)), tuple(values))
            while piece := await cur.fetchmany(_PIECE):
                rows.extend(piece)
                await asyncio.sleep(0)
    return rows
