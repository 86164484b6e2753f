"""searchsync's own properties of every index mapping, and what a projector's mapping must say.

A team's mapping holds its own fields only: `with_reserved` adds `RESERVED_PROPERTIES` (the fields
`Projector.project` writes, plus ``is_deleted``). A mapping may state one of them too, with the same
``type``; another type is refused. `mapping_gaps` lists the fields of a projected document that
the mapping has no property for (a strict mapping would refuse the document)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from searchsync.projection._document import SYNC_HASH, TOMBSTONED_AT

RESERVED_PROPERTIES: Final[Mapping[str, Mapping[str, str]]] = {
    "id": {"type": "keyword"},
    "source_revision": {"type": "long"},
    "projection_schema_version": {"type": "integer"},
    "projection_hash": {"type": "keyword"},
    SYNC_HASH: {"type": "long"},
    "is_deleted": {"type": "boolean"},
    TOMBSTONED_AT: {"type": "date"},
}
"""The properties searchsync adds to each mapping it creates (name -> property)."""

_OBJECT_TYPES: Final = frozenset({"object", "nested"})


def with_reserved(aggregate_type: str, mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A new index body: `mapping` with every reserved property it lacks (its own first, in its
    order). `ValueError` when it states a reserved property with another type, or has no
    ``mappings`` object."""
    mappings = mapping.get("mappings", {})
    if not isinstance(mappings, Mapping):
        raise ValueError(f"mapping of {aggregate_type}: 'mappings' must be an object")
    properties = mappings.get("properties", {})
    if not isinstance(properties, Mapping):
        raise ValueError(f"mapping of {aggregate_type}: 'mappings.properties' must be an object")
    for name, wanted in RESERVED_PROPERTIES.items():
        if (stated := properties.get(name)) is None:
            continue
        if not isinstance(stated, Mapping):
            raise ValueError(f"mapping of {aggregate_type}: property {name!r} must be an object")
        got = stated.get("type", "object")
        if got != wanted["type"]:
            raise ValueError(
                f"mapping of {aggregate_type}: property {name!r} is {got!r}, searchsync writes"
                f" it as {wanted['type']!r}: remove it from the mapping (searchsync adds it)"
                f" or make it {{'type': {wanted['type']!r}}}"
            )
    added = {k: dict(v) for k, v in RESERVED_PROPERTIES.items() if k not in properties}
    return {**mapping, "mappings": {**mappings, "properties": {**properties, **added}}}


def is_strict(mapping: Mapping[str, Any]) -> bool:
    mappings = mapping.get("mappings", {})
    return isinstance(mappings, Mapping) and str(mappings.get("dynamic", "")).lower() == "strict"


def mapping_gaps(mapping: Mapping[str, Any], document: Mapping[str, Any]) -> list[str]:
    """The dotted paths of `document` fields that the mapping has no property for and that its
    ``dynamic`` (inherited down the objects; Elasticsearch's default is ``true``) would not add:
    ``strict`` refuses the document, ``false`` keeps the field unsearchable. Sorted."""
    mappings = mapping.get("mappings", {})
    gaps = _gaps(mappings, document, "", "true") if isinstance(mappings, Mapping) else document
    return sorted(gaps)


def _gaps(
    node: Mapping[str, Any], value: Mapping[str, Any], prefix: str, inherited: str
) -> Iterator[str]:
    dynamic = str(node.get("dynamic", inherited)).lower()
    if dynamic in ("true", "runtime"):
        return
    properties = node.get("properties", {})
    properties = properties if isinstance(properties, Mapping) else {}
    for name, field in value.items():
        path = f"{prefix}{name}"
        if (prop := properties.get(name)) is None:
            yield path
            continue
        if not isinstance(prop, Mapping) or prop.get("type", "object") not in _OBJECT_TYPES:
            continue
        for item in field if isinstance(field, list) else [field]:
            if isinstance(item, Mapping):
                yield from _gaps(prop, item, f"{path}.", dynamic)
