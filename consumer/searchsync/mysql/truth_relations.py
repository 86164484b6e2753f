"""The truth port's read of a projector's children and lookups for a batch of root rows.

One ``SELECT <columns> FROM <table> WHERE <key> IN (...)`` per child table and one
``... WHERE id IN (...)`` per lookup table, for the whole batch, on the connection (and so in the
transaction, one snapshot) the roots were read in; never a query per root. The rows are attached
to the roots by `searchsync.projection.attach`, which orders them itself: the order MySQL returns
them in never reaches ``build``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Final

import aiomysql

from searchsync.mysql.pool import expand_in, quote_identifier, translate_errors
from searchsync.projection import Child, Lookup, Projector, Row, attach

__all__ = ["read_relations"]

_PIECE: Final = 256
"""Rows parsed between two turns of the event loop (a few milliseconds of CPU)."""


async def read_relations(conn: Any, projector: Projector, roots: Sequence[dict[str, Any]]) -> None:
    """Attach to each of `roots` (rows of `projector.table`, in place) its children and lookups,
    read on `conn`: one query per child and per lookup table for all of `roots`."""
    if not roots or not (projector.children or projector.lookups):
        return
    ids = list(dict.fromkeys(str(r["id"]) for r in roots))
    children: list[tuple[Child, list[Row]]] = []
    for child in projector.children:
        children.append((child, await _read(conn, child.table, child.columns, child.key, ids)))
    lookups: list[tuple[Lookup, list[Row]]] = []
    for lookup in projector.lookups:
        keys = list(dict.fromkeys(r[lookup.via] for r in roots if r.get(lookup.via) is not None))
        rows = await _read(conn, lookup.table, lookup.columns, "id", keys) if keys else []
        lookups.append((lookup, rows))
    attach(roots, children, lookups)


async def _read(
    conn: Any, table: str, columns: tuple[str, ...], key: str, values: Sequence[Any]
) -> list[Row]:
    select = ", ".join(quote_identifier(c) for c in columns)
    sql = f"SELECT {select} FROM {quote_identifier(table)} WHERE {quote_identifier(key)} IN %s"
    rows: list[Row] = []
    with translate_errors(f"read {table}"):
        # Unbuffered, in pieces: a batch's children may be many rows, parsed in Python.
        async with conn.cursor(aiomysql.SSDictCursor) as cur:
            await cur.execute(expand_in(sql, len(values)), tuple(values))
            while piece := await cur.fetchmany(_PIECE):
                rows.extend(piece)
                await asyncio.sleep(0)
    return rows
