"""Keys as real tables have them: an integer or string primary key under any column name, the
SQL texts built for them, and how the truth reads TIMESTAMP, DATETIME and BIT values."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pymysql.constants import FIELD_TYPE
from searchsync.config import load_settings
from searchsync.errors import ConfigError, PoisonMessage
from searchsync.examples import shop
from searchsync.mysql.column_types import ColumnTypes
from searchsync.mysql.fanout_dependents import dependents_sql
from searchsync.mysql.keys import cursor_param, key_params
from searchsync.mysql.truth_buckets import _source, entry_of_row
from searchsync.projection import Child, Projector, sync_hash
from searchsync.time_zones import parse_time_zone

MAPPING = shop.projector().mapping


def renamed(**overrides: Any) -> Projector:
    """A product projector whose key and revision columns are product_id and row_version."""
    columns = tuple({"id": "product_id", "revision": "row_version"}.get(c, c) for c in shop.COLUMNS)
    fields = {"columns": columns, "id_column": "product_id", "revision_column": "row_version"}
    return replace(shop.projector(), **{**fields, **overrides})


def shop_row(**values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": 42,
        "sku": "A-1",
        "name": "Lamp",
        "price": Decimal("12.50"),
        "stock": 3,
        "released_on": None,
        "attrs": None,
        "revision": 2,
        "deleted_at": None,
        "updated_at": datetime(2026, 1, 2, 3, 4, 5, 6),
        "images": [],
    }
    row.update(values)
    return row


@given(st.integers(0, 2**64 - 1))
def test_an_integer_key_is_its_decimal_text_everywhere(key: int) -> None:
    doc = shop.projector().project(shop_row(id=key))
    assert doc.doc_id == doc.body["id"] == str(key)
    assert doc.body["sync_hash"] == sync_hash("product", str(key))  # the repair's bucket key
    assert shop.projector().key_of({"id": key}) == str(key)


def test_named_key_and_revision_columns_are_read_from_the_row() -> None:
    p = renamed()
    row = {("product_id" if k == "id" else "row_version" if k == "revision" else k): v
           for k, v in shop_row().items()}  # fmt: skip
    doc = p.project(row)
    assert (doc.doc_id, doc.source_revision) == ("42", 2)
    assert doc.body == {**shop.projector().project(shop_row()).body}
    assert p.key_of(row) == "42" and p.revision_of(row) == 2
    assert p.revision_of({**row, "row_version": True}) is None
    entry = entry_of_row(row, content=False, projector=p)
    assert (entry.id, entry.revision, entry.deleted, entry.row) == ("42", 2, False, None)
    with pytest.raises(PoisonMessage, match="revision must be an int"):
        p.project({**row, "row_version": None})


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"id_column": "sku"}, r"columns must include \['product_id'\]|must include"),
        ({"id_column": "bad-name"}, "identifier"),
        ({"revision_column": "product_id"}, "two columns"),
    ],
)
def test_key_columns_are_checked(overrides: dict[str, str], message: str) -> None:
    if overrides.get("id_column") == "sku":
        renamed(id_column="sku")  # a column of the projector: accepted
        with pytest.raises(ValueError, match=message):
            renamed(id_column="no_such_column")
        return
    with pytest.raises(ValueError, match=message):
        renamed(**overrides)


@pytest.mark.parametrize("bad", [True, 4.0, "", None, b"1"])
def test_keys_that_are_no_integer_or_text_are_poison(bad: object) -> None:
    with pytest.raises(PoisonMessage, match="integer or a non-empty string"):
        shop.projector().project(shop_row(id=bad))


def test_key_parameters_for_integer_and_text_columns() -> None:
    assert key_params(["42", "x", "-3", "042", "7"], integer=True) == [42, -3, 7]
    assert key_params(["42", "x"], integer=False) == ["42", "x"]
    assert cursor_param(None, True) == -(2**63) and cursor_param("", True) == -(2**63)
    assert cursor_param("18446744073709551615", True) == 2**64 - 1  # exact, not a double
    assert cursor_param(None, False) == "" and cursor_param("b", False) == "b"
    with pytest.raises(ValueError):
        cursor_param("abc", True)


def test_sql_texts_use_the_projectors_key_columns() -> None:
    p = renamed()
    plain = dependents_sql("product", "category_id", None, None, keys=("product_id", "row_version"))
    assert plain == (
        "SELECT `product_id`, `row_version` FROM `product` WHERE `category_id` = %s"
        " AND `product_id` > %s ORDER BY `product_id` LIMIT %s"
    )
    child = Child("links", "product_link", key="pid", columns=("pid", "cid"), order_by=())
    through = dependents_sql("product", "cid", child, None, keys=("product_id", "row_version"))
    assert "MAX(r.`row_version`)" in through and "r.`product_id` = c.`pid`" in through
    # the default keys give the texts the fan-out always sent
    assert dependents_sql("article", "author_id", None, None) == (
        "SELECT id, revision FROM `article` WHERE `author_id` = %s AND id > %s ORDER BY id LIMIT %s"
    )
    src, args, order = _source(p, 0, 10, (5, 41), 100, False, "")
    assert src == (
        "`product` WHERE CRC32(CONCAT(%s, `product_id`)) >= %s AND CRC32(CONCAT(%s,"
        " `product_id`)) < %s AND `product_id` > %s ORDER BY `product_id` LIMIT %s"
    )
    assert args == ["product:", 0, "product:", 10, 41, 100] and order == "`product_id`"
    src, args, _ = _source(p, 0, 10, (5, 41), 100, True, "")
    assert "(`sync_hash` > %s OR `product_id` > %s)" in src and args == [5, 10, 5, 41, 100]


def test_timestamp_datetime_and_bit_values_are_read_by_their_column_type() -> None:
    naive = datetime(2026, 7, 1, 12, 0, 0, 5)
    description = [
        ("ts", FIELD_TYPE.TIMESTAMP),
        ("dt", FIELD_TYPE.DATETIME),
        ("flags", FIELD_TYPE.BIT),
        ("name", FIELD_TYPE.VAR_STRING),
    ]
    utc_rows = [{"ts": naive, "dt": naive, "flags": b"\x01\x02", "name": "x"}]
    ColumnTypes().apply(description, utc_rows)
    assert utc_rows == [{"ts": naive.replace(tzinfo=UTC), "dt": naive, "flags": 258, "name": "x"}]
    berlin = ZoneInfo("Europe/Berlin")
    rows = [{"ts": naive, "dt": naive, "flags": None, "name": "x"}]
    ColumnTypes(berlin).apply(description, rows)
    assert rows[0]["dt"] == naive.replace(tzinfo=berlin)  # 12:00 in Berlin: 10:00 UTC
    assert rows[0]["dt"].astimezone(UTC).hour == 10 and rows[0]["ts"].tzinfo is UTC
    untouched = [{"name": "x"}]
    ColumnTypes(berlin).apply([("name", FIELD_TYPE.VAR_STRING)], untouched)
    assert untouched == [{"name": "x"}]


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        ("UTC", timedelta(0)),
        ("+05:30", timedelta(hours=5, minutes=30)),
        ("-03:00", timedelta(hours=-3)),
        ("Asia/Tokyo", timedelta(hours=9)),
    ],
)
def test_time_zones_are_utc_offsets_or_iana_names(text: str, offset: timedelta) -> None:
    zone = parse_time_zone(text)
    assert datetime(2026, 1, 15, tzinfo=zone).utcoffset() == offset
    assert load_settings({"SEARCHSYNC_MYSQL_TIME_ZONE": text}).mysql.time_zone == text


@pytest.mark.parametrize("bad", ["", "CEST+2", "+25:00", "Mars/Olympus", "5", "Europe"])
def test_a_bad_time_zone_stops_start_up_naming_the_key_and_the_form(bad: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({"SEARCHSYNC_MYSQL_TIME_ZONE": bad})
    assert caught.value.key == "mysql.time_zone"
    assert "IANA zone name" in str(caught.value) and "+05:30" in str(caught.value)


def test_the_default_time_zone_is_utc() -> None:
    assert load_settings({}).mysql.time_zone == "UTC"
    assert parse_time_zone("UTC") is UTC and isinstance(parse_time_zone("+01:00"), timezone)
