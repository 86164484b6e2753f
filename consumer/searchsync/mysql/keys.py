"""Keys as the truth's SQL needs them: a document id is text (``"42"``), but a keyset cursor or an
``IN (...)`` list against an integer column must be sent as integers, so the comparison is exact
(MySQL compares an integer column with a string as doubles, inexact beyond 2^53) and text that is
no integer matches no row (``'42abc'`` would read row 42). Whether a key column is an integer is
read once per (table, column) from ``information_schema``."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

from searchsync.mysql.pool import translate_errors

_INTEGER_TYPES: Final = frozenset({"tinyint", "smallint", "mediumint", "int", "integer", "bigint"})
_INTEGER_TEXT: Final = re.compile(r"-?(?:0|[1-9][0-9]{0,19})")
_BELOW_EVERY_KEY: Final = -(2**63)


class DataTypes:
    """Per (table, column): its ``information_schema`` DATA_TYPE, lower case, read once ("" for a
    column not found: the table's own check fails later, loudly)."""

    def __init__(self) -> None:
        self._types: dict[tuple[str, str], str] = {}

    async def of(self, conn: Any, table: str, column: str) -> str:
        found = self._types.get((table, column))
        if found is None:
            with translate_errors(f"read the type of {table}.{column}"):
                async with conn.cursor() as cur:
                    await cur.execute(
                        "SELECT DATA_TYPE FROM information_schema.COLUMNS"
                        " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s"
                        " AND COLUMN_NAME = %s",
                        (table, column),
                    )
                    row = await cur.fetchone()
            found = self._types[(table, column)] = "" if row is None else str(row[0]).lower()
        return found

    async def integer(self, conn: Any, table: str, column: str) -> bool:
        """Whether `table`.`column` is an integer column (a column not found counts as text)."""
        return await self.of(conn, table, column) in _INTEGER_TYPES


def key_params(ids: Iterable[str], integer: bool) -> list[Any]:
    """The values of `ids` to send for a key column: for an integer column the ids that are
    integer text, as ints (any other id names no row); for a text column the ids themselves."""
    if not integer:
        return list(ids)
    return [int(i) for i in ids if _INTEGER_TEXT.fullmatch(i)]


def cursor_param(after: str | None, integer: bool) -> Any:
    """A keyset cursor (the last id seen, None or '' at the start) as a value to compare the key
    column with: every key is greater than the start's value."""
    if not integer:
        return after or ""
    if not after:
        return _BELOW_EVERY_KEY
    if not _INTEGER_TEXT.fullmatch(after):
        raise ValueError(f"cursor {after!r} is not the text of an integer key")
    return int(after)
