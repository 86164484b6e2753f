"""The wiki_page projector: one `wiki_page` row -> one search document.

Row columns used (schemas/sql/001_init.sql): id, title, content, relations_json, revision,
deleted_at. Soft-deleted rows are projected in full with ``is_deleted: true``.

`relations_json` holds a JSON array of relation objects::

    [{"type": "character", "target_id": "character_xxx", "label": "齐夏"}, ...]

- ``type`` (required): non-empty string without ``:``; the kind of the related entity.
- ``target_id`` (required): non-empty string; the related entity's id.
- ``label`` (optional): string or null; a display name. Missing means null.
- Any other key is ignored (not projected), so writers may carry extra data.
- Anything else (not an array, an item that is not an object, a missing or non-string
  ``type``/``target_id``, invalid JSON) is `PoisonMessage("PROJECTION_ERROR")`.

The document's ``relations`` are ``{"type", "target_id", "label"}`` objects, NFC-normalized,
exact duplicates dropped, sorted by (type, target_id, label with null first);
``relation_target_ids`` are the distinct ``"<type>:<target_id>"`` strings, sorted (seed 000's
``character:character_xxx``). Title and content are NFC-normalized.

Schema versions: 1 = this layout. Bump `SCHEMA_VERSION` whenever the document changes for the
same row (a field, a normalization rule), so repair and rebuild can tell old documents apart.
"""

from __future__ import annotations

import unicodedata
from importlib import resources
from typing import Any

import orjson

from consumer.errors import ErrorCode, PoisonMessage
from consumer.projection._registry import Projector, Row

__all__ = [
    "AGGREGATE_TYPE",
    "COLUMNS",
    "SCHEMA_VERSION",
    "TABLE",
    "build",
    "load_mapping",
    "projector",
]

AGGREGATE_TYPE = "wiki_page"
SCHEMA_VERSION = 1
TABLE = "wiki_page"
COLUMNS = ("id", "title", "content", "relations_json", "revision", "deleted_at")


def projector() -> Projector:
    """A new wiki_page `Projector` (reads the packaged mapping; call it at start-up)."""
    return Projector(
        aggregate_type=AGGREGATE_TYPE,
        schema_version=SCHEMA_VERSION,
        table=TABLE,
        columns=COLUMNS,
        build=build,
        mapping=load_mapping(),
    )


def load_mapping() -> dict[str, Any]:
    """The index body of schemas/index/wiki_page.json, from its copy inside the package."""
    data = resources.files("consumer").joinpath("_resources/wiki_page.mapping.json").read_bytes()
    mapping: dict[str, Any] = orjson.loads(data)
    return mapping


def build(row: Row) -> dict[str, Any]:
    """The wiki_page fields of `row` (without id/revision/hash, which `Projector` adds)."""
    relations = _relations(row["relations_json"])
    return {
        "title": _text(row["title"], "title"),
        "content": _text(row["content"], "content"),
        "relations": relations,
        "relation_target_ids": sorted({f"{r['type']}:{r['target_id']}" for r in relations}),
        "is_deleted": row["deleted_at"] is not None,
    }


def _text(value: object, name: str) -> str:
    if isinstance(value, bytes | bytearray):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _poison(f"{name} is not UTF-8") from exc
    if not isinstance(value, str):
        raise _poison(f"{name} must be a string, got {type(value).__name__}")
    return unicodedata.normalize("NFC", value)


def _relations(raw: object) -> list[dict[str, Any]]:
    if isinstance(raw, str | bytes | bytearray):
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise _poison(f"relations_json is not valid JSON: {exc}") from exc
    if not isinstance(raw, list):
        raise _poison(f"relations_json must be a JSON array, got {type(raw).__name__}")
    seen: dict[tuple[str, str, str | None], dict[str, Any]] = {}
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise _poison(f"relations_json[{index}] must be an object")
        kind = _required(item, "type", index)
        if ":" in kind:
            raise _poison(f"relations_json[{index}].type must not contain ':'")
        target = _required(item, "target_id", index)
        label = item.get("label")
        if label is not None:
            if not isinstance(label, str):
                raise _poison(f"relations_json[{index}].label must be a string or null")
            label = unicodedata.normalize("NFC", label)
        seen[(kind, target, label)] = {"type": kind, "target_id": target, "label": label}
    order = sorted(seen, key=lambda k: (k[0], k[1], k[2] is not None, k[2] or ""))
    return [seen[k] for k in order]


def _required(item: dict[str, Any], key: str, index: int) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise _poison(f"relations_json[{index}].{key} must be a non-empty string")
    return unicodedata.normalize("NFC", value)


def _poison(message: str) -> PoisonMessage:
    return PoisonMessage(ErrorCode.PROJECTION_ERROR, message)
