"""An example aggregate type with a team's real column types, `product`, plugged in as a user
would (``[projection] modules = ["searchsync.examples.shop"]``; schemas/sql/examples/shop.sql,
schemas/index/examples/product.json). Its key is a ``BIGINT UNSIGNED AUTO_INCREMENT``: the
document id is the id's text (``"42"``), with no code here for it.

`build` returns the driver's values as they are (a `Decimal` price, a `date`, a `datetime`) and
the canonical form writes them (docs/consumer.md, "Column types"): ``price`` as exact text
(``"12.50"``), ``released_on`` as ``"2026-12-04"``, ``updated_at`` in UTC to the microsecond. The
JSON column ``attrs`` is parsed (`json_column`), so both server families give the same document.
``images`` come from the child ``product_image`` in ``position`` order."""

from __future__ import annotations

from importlib import resources
from typing import Any

import orjson

from searchsync.projection import Child, Projector, Row, json_column

AGGREGATE_TYPE = "product"
SCHEMA_VERSION = 1
TABLE = "product"
COLUMNS = (
    "id",
    "sku",
    "name",
    "price",
    "stock",
    "released_on",
    "attrs",
    "revision",
    "deleted_at",
    "updated_at",
)
IMAGES = Child(
    "images",
    "product_image",
    key="product_id",
    columns=("product_id", "position", "url", "alt"),
    order_by=("position",),
)


def projector() -> Projector:
    data = resources.files("searchsync").joinpath("_resources/product.mapping.json").read_bytes()
    return Projector(
        aggregate_type=AGGREGATE_TYPE,
        schema_version=SCHEMA_VERSION,
        table=TABLE,
        columns=COLUMNS,
        build=build,
        mapping=orjson.loads(data),
        children=(IMAGES,),
    )


def projectors() -> tuple[Projector, ...]:
    """The plug-in contract of a module entry in ``projection.modules``."""
    return (projector(),)


def build(row: Row) -> dict[str, Any]:
    """The product fields of `row` (`Projector` adds id, revision and hash)."""
    return {
        "sku": row["sku"],
        "name": row["name"],
        "price": row["price"],
        "stock": row["stock"],
        "released_on": row["released_on"],
        "attrs": json_column(row["attrs"]),
        "updated_at": row["updated_at"],
        "images": [
            {"position": image["position"], "url": image["url"], "alt": image["alt"]}
            for image in row["images"]
        ],
        "is_deleted": row["deleted_at"] is not None,
    }
