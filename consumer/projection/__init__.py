"""Projection: one deterministic projector per aggregate type (DESIGN.md invariant 6).

`default_registry()` returns a new registry holding the built-in projectors. To add a type,
build a `Projector` and register it (see the example in `Projector`'s docstring)::

    registry = default_registry()
    registry.register(Projector(aggregate_type="note", schema_version=1, table="note",
                                columns=("id", "text", "revision", "deleted_at"),
                                build=build_note, mapping=note_mapping))
    document = registry.get("note").project(row)
"""

from __future__ import annotations

from consumer.projection import wiki_page
from consumer.projection._registry import (
    RESERVED_FIELDS,
    Document,
    Projector,
    ProjectorRegistry,
    Row,
)
from consumer.projection.canonical import CANONICALIZATION_VERSION, canonical_json, sha256_hex

__all__ = [
    "CANONICALIZATION_VERSION",
    "RESERVED_FIELDS",
    "Document",
    "Projector",
    "ProjectorRegistry",
    "Row",
    "canonical_json",
    "default_registry",
    "sha256_hex",
]


def default_registry() -> ProjectorRegistry:
    """A new registry with the built-in projectors (wiki_page) registered."""
    registry = ProjectorRegistry()
    registry.register(wiki_page.projector())
    return registry
