"""An example of a team's projector module, shipped to the pods as the ConfigMap
searchsync-projectors and named in searchsync.toml's ``[projection] modules``: the ``product``
type, one document per row of the table ``product`` (id, name, price_cents, revision, deleted_at).

A projector must be deterministic (the same row gives the same document) and raise on a value it
cannot project: docs/design.md and docs/production.md say what else it promises."""

from __future__ import annotations

import unicodedata
from typing import Any

from searchsync.errors import ErrorCode, PoisonMessage
from searchsync.projection import Projector, Row

AGGREGATE_TYPE = "product"
SCHEMA_VERSION = 1  # raise it whenever the document changes for the same row
MAPPING: dict[str, Any] = {
    "settings": {"number_of_shards": 1, "number_of_replicas": 1},
    "mappings": {
        "dynamic": "strict",
        "properties": {
            "id": {"type": "keyword"},
            "name": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
            "price_cents": {"type": "long"},
            "is_deleted": {"type": "boolean"},
            # the fields searchsync adds to every document
            "source_revision": {"type": "long"},
            "projection_schema_version": {"type": "integer"},
            "projection_hash": {"type": "keyword"},
            "sync_hash": {"type": "long"},
            "tombstoned_at": {"type": "date"},
        },
    },
}


def projectors() -> tuple[Projector, ...]:
    """The plug-in entry point: every projector this module registers."""
    return (
        Projector(
            aggregate_type=AGGREGATE_TYPE,
            schema_version=SCHEMA_VERSION,
            table="product",
            columns=("id", "name", "price_cents", "revision", "deleted_at"),
            build=build,
            mapping=MAPPING,
        ),
    )


def build(row: Row) -> dict[str, Any]:
    name, price = row["name"], row["price_cents"]
    if not isinstance(name, str) or not isinstance(price, int):
        raise PoisonMessage(ErrorCode.PROJECTION_ERROR, f"bad product row {row['id']!r}")
    return {
        "name": unicodedata.normalize("NFC", name),
        "price_cents": price,
        "is_deleted": row["deleted_at"] is not None,
    }
