"""A scratch aggregate type for the tests of a reference through a child table: a product whose
categories are child rows (``xc_product_category``), each naming a category, an aggregate of its
own (``xc_category``) whose rename fans out to every product that lists it.

``projection.modules = ["tests.catalog"]`` plugs it into a consumer (tests/integration/
test_fanout_child_e2e.py); `DDL` creates its tables (as root, on a scratch stack), with the index
the fan-out through the child needs: ``(category_id, product_id)`` on the child table.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from searchsync.projection import Child, Lookup, Projector, Row

__all__ = ["CATEGORIES", "CATEGORY", "DDL", "TABLES", "build", "projector", "projectors"]

PRODUCT, CHILD, REFERENCED = "xc_product", "xc_product_category", "xc_category"
TABLES = (PRODUCT, CHILD, REFERENCED)

CATEGORIES = Child(
    "categories",
    CHILD,
    key="product_id",
    columns=("product_id", "category_id", "position"),
    order_by=("position",),
)
CATEGORY = Lookup(
    "category",
    REFERENCED,
    via="category_id",
    columns=("id", "name"),
    aggregate_type=REFERENCED,
    through="categories",
)

_ROOT = (
    "id VARCHAR(64) NOT NULL, revision BIGINT UNSIGNED NOT NULL, deleted_at DATETIME(6) NULL,"
    " updated_at DATETIME(6) NOT NULL"
)
DDL = (
    f"CREATE TABLE IF NOT EXISTS {PRODUCT} ({_ROOT}, title VARCHAR(200) NOT NULL,"
    " PRIMARY KEY (id)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    f"CREATE TABLE IF NOT EXISTS {CHILD} (product_id VARCHAR(64) NOT NULL,"
    " category_id VARCHAR(64) NOT NULL, position INT NOT NULL,"
    " PRIMARY KEY (product_id, position), KEY xc_category_product (category_id, product_id))"
    " DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    f"CREATE TABLE IF NOT EXISTS {REFERENCED} ({_ROOT}, name VARCHAR(200) NOT NULL,"
    " PRIMARY KEY (id)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
)

_MAPPING: dict[str, Any] = {
    "settings": {"number_of_shards": 1, "number_of_replicas": 0},
    "mappings": {
        "dynamic": "strict",
        "properties": {
            "id": {"type": "keyword"},
            "title": {"type": "text"},
            "categories": {"type": "keyword"},
            "source_revision": {"type": "long"},
            "projection_schema_version": {"type": "integer"},
            "projection_hash": {"type": "keyword"},
            "sync_hash": {"type": "long"},
            "is_deleted": {"type": "boolean"},
            "tombstoned_at": {"type": "date"},
        },
    },
}


def build(row: Row) -> dict[str, Any]:
    """The title, and the names of the product's categories in position order (a missing
    category shows as its id in brackets)."""
    names = [
        f"[{c['category_id']}]"
        if c["category"] is None
        else unicodedata.normalize("NFC", c["category"]["name"])
        for c in row["categories"]
    ]
    return {"title": row["title"], "categories": names, "is_deleted": row["deleted_at"] is not None}


def projector() -> Projector:
    return Projector(
        aggregate_type=PRODUCT,
        schema_version=1,
        table=PRODUCT,
        columns=("id", "title", "revision", "deleted_at"),
        build=build,
        mapping=_MAPPING,
        children=(CATEGORIES,),
        lookups=(CATEGORY,),
    )


def projectors() -> tuple[Projector, ...]:
    return (projector(),)
