"""The example aggregate type `product` (consumer/searchsync/examples/shop.py)."""

from __future__ import annotations

import re
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
from searchsync.examples import shop
from searchsync.projection import canonical_json

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"PRIMARY", "UNIQUE"}


def row(**values: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": 7,
        "sku": "LAMP-1",
        "name": "Lamp",
        "price": Decimal("12.50"),
        "stock": 3,
        "released_on": date(2026, 3, 1),
        "attrs": '{"size": {"w": 10}, "colour": "红"}',
        "revision": 4,
        "deleted_at": None,
        "updated_at": datetime(2026, 3, 1, 8, 30, 0, 123456),
        "images": [
            {"product_id": 7, "position": 0, "url": "a.png", "alt": None},
            {"product_id": 7, "position": 1, "url": "b.png", "alt": "back"},
        ],
    }
    base.update(values)
    return base


def test_the_driver_values_project_to_their_documented_forms() -> None:
    doc = shop.projector().project(row())
    assert doc.doc_id == "7"
    body = doc.body
    assert body["price"] == "12.50" and body["released_on"] == "2026-03-01"
    assert body["updated_at"] == "2026-03-01T08:30:00.123456Z"
    assert body["attrs"] == {"colour": "红", "size": {"w": 10}}
    assert [i["url"] for i in body["images"]] == ["a.png", "b.png"]
    assert body["is_deleted"] is False and doc.source_revision == 4


def test_the_same_row_gives_the_same_bytes_whichever_way_its_json_is_spelled() -> None:
    spaced = shop.projector().project(row(attrs='{ "colour" : "红", "size": { "w": 10 } }'))
    assert spaced.encoded == shop.projector().project(row()).encoded
    assert spaced.projection_hash == shop.projector().project(row()).projection_hash


def test_packaged_mapping_is_a_copy_of_the_schema_file_and_covers_the_document() -> None:
    schema = ROOT / "schemas/index/examples/product.json"
    packaged = ROOT / "consumer/searchsync/_resources/product.mapping.json"
    assert orjson.loads(packaged.read_bytes()) == orjson.loads(schema.read_bytes())
    mapping = shop.projector().mapping["mappings"]
    assert mapping["dynamic"] == "strict"
    body = orjson.loads(canonical_json(shop.projector().project(row()).body))
    assert set(mapping["properties"]) == set(body) | {"tombstoned_at"}


def test_projector_reads_the_columns_of_the_example_migration() -> None:
    sql = (ROOT / "schemas/sql/examples/shop.sql").read_text(encoding="utf-8")
    tables = {
        name: set(re.findall(r"^\s{4}(\w+)\s+[A-Z]", body, flags=re.MULTILINE)) - KEYS
        for name, body in re.findall(
            r"^CREATE TABLE IF NOT EXISTS (\w+) \((.*?)^\)", sql, flags=re.MULTILINE | re.DOTALL
        )
    }
    assert tables["product"] == set(shop.COLUMNS)
    assert tables["product_image"] == set(shop.IMAGES.columns)
    assert "PRIMARY KEY (product_id, position)" in sql  # the child's key starts its index
