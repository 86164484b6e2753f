"""A scratch aggregate type for the tests of a reference through a child table: a product whose
categories are child rows (``xc_product_category``), each naming a category, an aggregate of its
own (``xc_category``) whose rename fans out to every product that lists it.

``projection.modules = ["tests.catalog"]`` plugs it into a consumer (tests/integration/
test_fanout_child_e2e.py); `ddl` creates its tables. Another `prefix` gives the same type over
tables (and aggregate types) of other names.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from searchsync.projection import Child, Lookup, Projector, Row

__all__ = ["CATEGORIES", "CATEGORY", "build", "ddl", "projector", "projectors", "tables"]


def tables(prefix: str = "xc") -> tuple[str, str, str]:
    """The product, link (child) and category tables (and aggregate types) of `prefix`."""
    return f"{prefix}_product", f"{prefix}_product_category", f"{prefix}_category"


def _relations(prefix: str) -> tuple[Child, Lookup]:
    _, child, referenced = tables(prefix)
    categories = Child(
        "categories",
        child,
        key="product_id",
        columns=("product_id", "category_id", "position"),
        order_by=("position",),
    )
    category = Lookup(
        "category",
        referenced,
        via="category_id",
        columns=("id", "name"),
        aggregate_type=referenced,
        through="categories",
    )
    return categories, category


CATEGORIES, CATEGORY = _relations("xc")

_ROOT = (
    "id VARCHAR(64) NOT NULL, revision BIGINT UNSIGNED NOT NULL, deleted_at DATETIME(6) NULL,"
    " updated_at DATETIME(6) NOT NULL"
)
_CHARSET = "DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"


def ddl(prefix: str = "xc") -> tuple[str, str, str]:
    """CREATE TABLE statements of `tables`, with the index the fan-out through the child needs:
    ``(category_id, product_id)`` on the link table."""
    product, child, referenced = tables(prefix)
    return (
        f"CREATE TABLE IF NOT EXISTS {product} ({_ROOT}, title VARCHAR(200) NOT NULL,"
        f" PRIMARY KEY (id)) {_CHARSET}",
        f"CREATE TABLE IF NOT EXISTS {child} (product_id VARCHAR(64) NOT NULL,"
        " category_id VARCHAR(64) NOT NULL, position INT NOT NULL,"
        " PRIMARY KEY (product_id, position), KEY category_product (category_id, product_id))"
        f" {_CHARSET}",
        f"CREATE TABLE IF NOT EXISTS {referenced} ({_ROOT}, name VARCHAR(200) NOT NULL,"
        f" PRIMARY KEY (id)) {_CHARSET}",
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


def projector(prefix: str = "xc") -> Projector:
    """The product projector over the tables of `prefix`."""
    product = tables(prefix)[0]
    categories, category = _relations(prefix)
    return Projector(
        aggregate_type=product,
        schema_version=1,
        table=product,
        columns=("id", "title", "revision", "deleted_at"),
        build=build,
        mapping=_MAPPING,
        children=(categories,),
        lookups=(category,),
    )


def projectors() -> tuple[Projector, ...]:
    """The plug-in contract: the product type over the ``xc_`` tables."""
    return (projector(),)
