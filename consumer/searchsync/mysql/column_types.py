"""How the truth reads the values of columns whose Python value alone does not say what they
mean (docs/consumer.md, "Column types"), from the cursor's description:

- TIMESTAMP: an instant; searchsync's sessions run at ``time_zone = '+00:00'``, so the driver's
  naive value is UTC and gets ``tzinfo=UTC``.
- DATETIME: a wall-clock time; a naive value is read in ``[mysql] time_zone`` (a zone other than
  UTC is attached; under UTC it stays naive, which the canonical form reads as UTC).
- BIT: the driver's big-endian bytes become an int.

A page without such columns is left as it is (the common case costs one look at the description).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo
from typing import Any

from pymysql.constants import FIELD_TYPE


class ColumnTypes:
    """Applies the rules above to pages of rows read with a dict cursor."""

    def __init__(self, time_zone: tzinfo = UTC) -> None:
        self._zones: dict[int, tzinfo] = {FIELD_TYPE.TIMESTAMP: UTC}
        if time_zone is not UTC:
            self._zones[FIELD_TYPE.DATETIME] = time_zone

    def apply(self, description: Sequence[Sequence[Any]] | None, rows: Sequence[Any]) -> None:
        """Convert, in place, the values of `rows` (dicts) in TIMESTAMP, DATETIME and BIT
        columns of `description` (the cursor's, ``(name, type_code, ...)`` per column)."""
        if not rows or not description:
            return
        zoned = [(c[0], self._zones[c[1]]) for c in description if c[1] in self._zones]
        bits = [c[0] for c in description if c[1] == FIELD_TYPE.BIT]
        if not (zoned or bits):
            return
        for row in rows:
            for name, zone in zoned:
                value = row.get(name)
                if isinstance(value, datetime) and value.tzinfo is None:
                    row[name] = value.replace(tzinfo=zone)
            for name in bits:
                value = row.get(name)
                if isinstance(value, bytes | bytearray):
                    row[name] = int.from_bytes(value, "big")
