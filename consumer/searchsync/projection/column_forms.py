"""The canonical form of each value MySQL and MariaDB columns give through aiomysql/PyMySQL that is
not plain JSON already (the table in docs/consumer.md, "Column types"). Each form is a JSON
string, fixed by the value alone, that Elasticsearch and OpenSearch index:

- `Decimal` (DECIMAL, NUMERIC): its exact fixed-point text, ``"12.50"`` (the column's scale kept,
  never an exponent, ``-0`` as ``0``); a numeric field parses it, ``_source`` keeps it exact.
- `datetime` (DATETIME, TIMESTAMP): ISO 8601 in UTC with microseconds,
  ``"2026-12-04T22:10:58.123456Z"``. A naive value is UTC: the truth reads naive DATETIMEs under
  ``[mysql] time_zone`` and TIMESTAMPs as UTC instants (`searchsync.mysql.column_types`).
- `date` (DATE): ``"2026-12-04"``. `time` (a bare TIME): ``"22:10:58.000000"``.
- `timedelta` (TIME, as the driver gives it; -838:59:59 .. 838:59:59):
  ``"[-]HH:MM:SS.ffffff"``, hours two digits or more.
- `set` / `frozenset` (SET): its members sorted (strings by code point after NFC).
- `bytes` (BLOB, BINARY, VARBINARY, GEOMETRY): standard padded base64 (a ``binary`` field).

Each form is new: no value that had a canonical form before changes its bytes or hash. Where the
driver's value does not say what the column means, `build` says it: `json_column` (JSON),
`flag_column` (TINYINT(1) as a bool), `set_column` (SET text as a set).
"""

from __future__ import annotations

import base64
import unicodedata
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import orjson

from searchsync.errors import CanonicalizationError


def column_form(value: object, path: str) -> Any:
    """The canonical form of a column value of a type listed above; `CanonicalizationError`
    naming `path` for a value of another type, or one of such a type that has no form (a NaN)."""
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise CanonicalizationError(f"{path}: non-finite Decimal {value!r}")
        return format(value.copy_abs() if value.is_zero() else value, "f")
    if isinstance(value, datetime):  # before date: a datetime is a date
        return format_datetime(value)
    if isinstance(value, date):
        return date.isoformat(value)
    if isinstance(value, timedelta):  # MySQL's own TIME text, microseconds always
        micros = value // timedelta(microseconds=1)
        seconds, fraction = divmod(abs(micros), 1_000_000)
        minutes, second = divmod(seconds, 60)
        hour, minute = divmod(minutes, 60)
        return f"{'-' if micros < 0 else ''}{hour:02d}:{minute:02d}:{second:02d}.{fraction:06d}"
    if isinstance(value, time):
        if value.tzinfo is not None:
            raise CanonicalizationError(
                f"{path}: a time of day with a time zone has no canonical form"
            )
        return time.isoformat(value, "microseconds")
    if isinstance(value, set | frozenset):
        members = [unicodedata.normalize("NFC", m) if isinstance(m, str) else m for m in value]
        strings = all(isinstance(m, str) for m in members)
        if strings and len(set(members)) != len(members):
            raise CanonicalizationError(f"{path}: set members collide after NFC")
        if strings or all(isinstance(m, int) and not isinstance(m, bool) for m in members):
            return sorted(members)
        raise CanonicalizationError(
            f"{path}: a set has a canonical form only of strings or of integers"
        )
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise CanonicalizationError(
        f"{path}: {type(value).__name__} has no canonical JSON form (docs/consumer.md,"
        ' "Column types", lists the forms)'
    )


def format_datetime(value: datetime, timespec: str = "microseconds") -> str:
    """`value` in UTC as ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (naive means UTC; `timespec` as
    `datetime.isoformat`'s, which truncates)."""
    utc = value if value.tzinfo is None else value.astimezone(UTC).replace(tzinfo=None)
    return f"{datetime.isoformat(utc, timespec=timespec)}Z"


def json_column(value: object) -> Any:
    """A JSON column's value parsed (MariaDB and MySQL give its text, each server spelling it
    its own way; the parsed value is the same on both). None stays None; text that is no JSON
    is a `ValueError` (the projector's PROJECTION_ERROR)."""
    if value is None or isinstance(value, dict | list):
        return value
    if not isinstance(value, str | bytes):
        raise ValueError(f"a JSON column holds text, got {type(value).__name__}")
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"a JSON column holds no JSON: {exc}") from None


def flag_column(value: object) -> bool | None:
    """A TINYINT(1) (BOOLEAN) column as a bool: 0 is false, any other integer true."""
    if value is None or isinstance(value, bool):
        return value
    if not isinstance(value, int):
        raise ValueError(f"a TINYINT(1) column holds an integer, got {type(value).__name__}")
    return value != 0


def set_column(value: object) -> frozenset[str] | None:
    """A SET column's members: the driver gives ``'a,b'`` (or a set); ``''`` is no member."""
    if value is None:
        return None
    if isinstance(value, set | frozenset):
        return frozenset(value)
    if not isinstance(value, str):
        raise ValueError(f"a SET column holds text, got {type(value).__name__}")
    return frozenset(m for m in value.split(",") if m)
