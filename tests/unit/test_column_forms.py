"""The canonical form of every column type MySQL and MariaDB give (docs/consumer.md, "Column
types"): one form per value, the same on every run, and back to the value where that is sensible."""

from __future__ import annotations

import base64
import json
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.errors import CanonicalizationError
from searchsync.projection import canonical_json, flag_column, json_column, set_column
from searchsync.projection.canonical import normalize

decimals = st.decimals(allow_nan=False, allow_infinity=False, places=None)
naive_datetimes = st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 30))
offsets = st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
mysql_times = st.integers(-(838 * 3600 + 59 * 60 + 59) * 10**6, (838 * 3600 + 59 * 60 + 59) * 10**6)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


def form(value: object) -> Any:
    """The value as the canonical bytes hold it."""
    return orjson.loads(canonical_json({"v": value}))["v"]


def same_twice(value: object) -> bytes:
    first = canonical_json({"v": value})
    assert canonical_json({"v": value}) == first
    return first


@given(decimals)
def test_a_decimal_is_its_exact_fixed_point_text(value: Decimal) -> None:
    same_twice(value)
    text = form(value)
    assert isinstance(text, str) and "E" not in text.upper()
    assert Decimal(text) == value
    assert form(Decimal(text)) == text  # a fixed point: read back, written the same


def test_a_decimal_keeps_its_scale_and_has_no_negative_zero() -> None:
    assert form(Decimal("12.50")) == "12.50"
    assert form(Decimal("12345678.05")) == "12345678.05"
    assert form(Decimal("-0.00")) == "0.00"
    assert form(Decimal("1E+3")) == "1000"
    assert form(Decimal("0E-10")) == "0.0000000000"


@given(naive_datetimes, offsets)
def test_a_datetime_is_iso_8601_utc_to_the_microsecond(value: datetime, zone: timezone) -> None:
    same_twice(value)
    text = form(value)
    assert len(text) == 27 and text.endswith("Z")
    assert datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ") == value  # naive: UTC
    aware = value.replace(tzinfo=zone)
    try:
        instant = aware.astimezone(UTC)
    except OverflowError:
        return
    assert form(aware) == form(instant.replace(tzinfo=None))  # one instant, one form


@given(st.dates(min_value=date(1000, 1, 1)))
def test_a_date_is_iso_8601(value: date) -> None:
    same_twice(value)
    assert date.fromisoformat(form(value)) == value


@given(mysql_times)
def test_a_time_column_round_trips(micros: int) -> None:
    value = timedelta(microseconds=micros)
    same_twice(value)
    text = form(value)
    sign, body = (-1, text[1:]) if text.startswith("-") else (1, text)
    hours, minutes, seconds = body.split(":")
    back = timedelta(hours=int(hours), minutes=int(minutes), seconds=float(seconds))
    assert abs(sign * back - value) < timedelta(microseconds=1)
    assert len(seconds) == 9 and len(minutes) == 2 and len(hours) >= 2


def test_time_forms_as_mysql_writes_them() -> None:
    assert form(timedelta(hours=-1, minutes=-30)) == "-01:30:00.000000"
    assert form(timedelta(hours=838, minutes=59, seconds=59)) == "838:59:59.000000"
    assert form(time(9, 5, 1, 7)) == "09:05:01.000007"


@given(st.sets(st.text(max_size=6)))
def test_a_set_is_its_sorted_members(members: set[str]) -> None:
    ordered = list(members)
    forward, backward = set(ordered), set(reversed(ordered))
    assert same_twice(frozenset(forward)) == canonical_json({"v": backward})
    assert form(forward) == sorted(normalize(m) for m in members)


@given(st.binary(max_size=64))
def test_bytes_are_base64(value: bytes) -> None:
    same_twice(value)
    assert base64.b64decode(form(value)) == value


@given(json_values)
def test_a_json_column_gives_one_form_however_the_server_spells_it(value: Any) -> None:
    compact = orjson.dumps(value).decode()
    spaced = json.dumps(value, indent=1, ensure_ascii=False)  # as MySQL or MariaDB might keep it
    assert canonical_json(json_column(compact)) == canonical_json(json_column(spaced))
    assert json_column(value) is value if isinstance(value, dict | list) else True


def test_column_helpers() -> None:
    assert [flag_column(v) for v in (0, 1, 2, None, True)] == [False, True, True, None, True]
    assert set_column("b,a") == frozenset({"a", "b"}) and set_column("") == frozenset()
    assert set_column(None) is None and form(set_column("b,a")) == ["a", "b"]
    for bad, helper in (("x", flag_column), (1, set_column), ("{", json_column)):
        with pytest.raises(ValueError):
            helper(bad)


@pytest.mark.parametrize(
    "bad", [Decimal("NaN"), Decimal("Infinity"), {1, "x"}, time(1, tzinfo=UTC)]
)
def test_values_of_column_types_without_a_form_are_refused(bad: object) -> None:
    with pytest.raises(CanonicalizationError, match=r"\$\.v"):
        canonical_json({"v": bad})


def test_a_value_of_no_known_type_names_the_table_of_forms() -> None:
    with pytest.raises(CanonicalizationError, match="Column types"):
        canonical_json({"v": object()})
