"""The wiki_page projector (schemas/sql/demo/wiki_page.sql; docs/design.md, "The wiki_page
document").

`relations_json` maps a relation type (`RELATION_TYPE`, an Elasticsearch field under
``relations``) to a list of entities with non-empty ``entity_type`` (no ``:``) and ``entity_id``;
other keys are not projected. The document's ``relations`` holds, per type, the sorted distinct
``"<entity_type>:<entity_id>"`` (NFC); ``relation_target_ids`` their union. Anything else is a
PROJECTION_ERROR. Bump `SCHEMA_VERSION` whenever the document changes for the same row.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from importlib import resources
from typing import Any, cast

import orjson

from searchsync.errors import PoisonMessage
from searchsync.projection._registry import Projector, Row, projection_error

SCHEMA_VERSION = 2
RELATION_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def projector() -> Projector:
    """A new wiki_page `Projector` (reads the packaged mapping; call it at start-up)."""
    return Projector(
        aggregate_type="wiki_page",
        schema_version=SCHEMA_VERSION,
        table="wiki_page",
        columns=("id", "title", "content", "relations_json", "revision", "deleted_at"),
        build=build,
        mapping=load_mapping(),
        canonical_fields=True,  # every string `build` returns is NFC; no numbers
    )


def projectors() -> tuple[Projector, ...]:
    """The plug-in entry point (``projection.modules = ["searchsync.projection.wiki_page"]``)."""
    return (projector(),)


def load_mapping() -> dict[str, Any]:
    """The index body of schemas/index/wiki_page.json, from its copy inside the package."""
    data = resources.files("searchsync").joinpath("_resources/wiki_page.mapping.json").read_bytes()
    return cast(dict[str, Any], orjson.loads(data))


def build(row: Row) -> dict[str, Any]:
    """The wiki_page fields of `row` (without id/revision/hash, which `Projector` adds)."""
    raw = row["relations_json"]
    if isinstance(raw, str | bytes | bytearray):
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise projection_error(f"relations_json is not valid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise projection_error(f"relations_json must be a JSON object, got {type(raw).__name__}")
    relations: dict[str, list[str]] = {}
    for kind in sorted(raw):  # sorted: the first bad key reported does not depend on key order
        if not isinstance(kind, str) or not _is_relation_type(kind):
            raise projection_error(f"relations_json key {kind!r}: want {RELATION_TYPE.pattern}")
        entities = raw[kind]
        if not isinstance(entities, list):
            raise projection_error(
                f"relations_json.{kind} must be a list, got {type(entities).__name__}"
            )
        targets: set[str] = set()
        for entity in entities:  # the hot loop: checks inline, `_bad_entity` says what is wrong
            entity_type = entity.get("entity_type") if type(entity) is dict else None
            entity_id = entity.get("entity_id") if entity_type is not None else None
            if (
                type(entity_type) is not str
                or type(entity_id) is not str
                or not entity_type
                or not entity_id
            ):
                raise _bad_entity(kind, entities, entity)
            target = f"{entity_type}:{entity_id}"
            if not target.isascii():
                entity_type = unicodedata.normalize("NFC", entity_type)
                target = f"{entity_type}:{unicodedata.normalize('NFC', entity_id)}"
            if ":" in entity_type:
                raise _bad_entity(kind, entities, entity)
            targets.add(target)  # NFC, so that dedupe and sort act on what canonical JSON emits
        relations[kind] = sorted(targets)
    return {
        "title": _text(row["title"], "title"),
        "content": _text(row["content"], "content"),
        "relations": relations,
        "relation_target_ids": sorted({t for targets in relations.values() for t in targets}),
        "is_deleted": row["deleted_at"] is not None,
    }


def _text(value: object, name: str) -> str:
    if isinstance(value, bytes | bytearray):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise projection_error(f"{name} is not UTF-8") from exc
    if not isinstance(value, str):
        raise projection_error(f"{name} must be a string, got {type(value).__name__}")
    return value if value.isascii() else unicodedata.normalize("NFC", value)  # ASCII is NFC


@functools.lru_cache(maxsize=4096)
def _is_relation_type(kind: str) -> bool:
    """`RELATION_TYPE` matches `kind` (remembered: relation types come from a small set)."""
    return RELATION_TYPE.fullmatch(kind) is not None


def _bad_entity(kind: str, entities: list[Any], entity: object) -> PoisonMessage:
    """The error for `entity`, the first bad entity of ``relations_json.<kind>``."""
    where = f"{kind}[{next(i for i, e in enumerate(entities) if e is entity)}]"
    if not isinstance(entity, dict):
        return projection_error(f"relations_json.{where} must be an object")
    for key in ("entity_type", "entity_id"):
        value = entity.get(key)
        if not isinstance(value, str) or not value:
            return projection_error(f"relations_json.{where}.{key} must be a non-empty string")
    return projection_error(f"relations_json.{where}.entity_type must not contain ':'")
