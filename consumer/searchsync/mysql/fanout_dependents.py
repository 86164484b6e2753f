"""The fan-out's read of "who references X" in MySQL: the next page of dependents' ids and
revisions, in id order, after a cursor; through a column of the dependent's table (one range of
its index ``(<via>, id)``) or through a child table (`dependents_sql`)."""

from __future__ import annotations

import logging
from typing import Any

from searchsync.mysql.pool import quote_identifier
from searchsync.naming import IDENTIFIER
from searchsync.projection import Child

log = logging.getLogger(__name__)


class DependentIndexes:
    """The index ``(via, key)`` of each child table, found once per (table, via, key)."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str, str], str | None] = {}

    async def name(self, cur: Any, child: Child, via: str) -> str | None:
        """The name of an index of `child`'s table that starts with ``(via, child.key)``, or None
        (logged once)."""
        key = (child.table, via, child.key)
        if key not in self._found:
            await cur.execute(
                "SELECT INDEX_NAME FROM information_schema.STATISTICS"
                " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s"
                " AND ((SEQ_IN_INDEX = 1 AND COLUMN_NAME = %s)"
                " OR (SEQ_IN_INDEX = 2 AND COLUMN_NAME = %s))"
                " GROUP BY INDEX_NAME HAVING COUNT(*) = 2 ORDER BY INDEX_NAME LIMIT 1",
                key,
            )
            row = await cur.fetchone()
            plain = row is not None and IDENTIFIER.fullmatch(str(row[0]))
            self._found[key] = str(row[0]) if plain else None
            if self._found[key] is None:
                log.warning(
                    "fan-out: no index (%s, %s) on %s (with a plain name): every page of"
                    " dependents may scan it",
                    via,
                    child.key,
                    child.table,
                )
        return self._found[key]


def dependents_sql(
    table: str,
    via: str,
    through: Child | None,
    index: str | None,
    *,
    keys: tuple[str, str] = ("id", "revision"),
) -> str:
    """The page query (parameters: the referenced id, the cursor, the limit).

    Through a child table: ``STRAIGHT_JOIN`` from the child's index ``(<via>, <key>)`` (forced
    when `index` names it) to the root table, grouped by root: each root once, in key order,
    none that no longer exists. MariaDB's own plan was measured to start that index at X's first
    entry rather than at the cursor, or to scan the root table. `keys`: the root table's id and
    revision columns."""
    table_q, via_q = quote_identifier(table), quote_identifier(via)
    key_q, rev_q = keys if keys == ("id", "revision") else map(quote_identifier, keys)
    if through is None:
        return (
            f"SELECT {key_q}, {rev_q} FROM {table_q}"
            f" WHERE {via_q} = %s AND {key_q} > %s ORDER BY {key_q} LIMIT %s"
        )
    child_q, key = quote_identifier(through.table), f"c.{quote_identifier(through.key)}"
    hint = "" if index is None else f" FORCE INDEX ({quote_identifier(index)})"
    return (
        f"SELECT STRAIGHT_JOIN {key}, MAX(r.{rev_q}) FROM {child_q} c{hint}"
        f" JOIN {table_q} r ON r.{key_q} = {key}"
        f" WHERE c.{via_q} = %s AND {key} > %s GROUP BY {key} ORDER BY {key} LIMIT %s"
    )
