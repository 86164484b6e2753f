"""Projection: one deterministic projector per aggregate type (docs/design.md, invariant 6).
Commands build their registry with `registry_from_settings(settings.projection)`."""

from __future__ import annotations

from searchsync.config import ProjectionSettings
from searchsync.projection._document import (
    OPERATIONAL_FIELDS,
    TOMBSTONED_AT,
    Document,
    content_hash,
    format_timestamp,
    projected_fields,
    sync_hash,
)
from searchsync.projection._registry import RESERVED_FIELDS, Projector, ProjectorRegistry
from searchsync.projection._relations import (
    Child,
    Lookup,
    Row,
    attach_steps,
    child_order,
    lookup_keys,
    through_child,
)
from searchsync.projection.canonical import canonical_json
from searchsync.projection.column_forms import flag_column, json_column, set_column
from searchsync.projection.plugins import registry_from_settings

__all__ = [
    "OPERATIONAL_FIELDS",
    "RESERVED_FIELDS",
    "TOMBSTONED_AT",
    "Child",
    "Document",
    "Lookup",
    "Projector",
    "ProjectorRegistry",
    "Row",
    "attach_steps",
    "canonical_json",
    "child_order",
    "content_hash",
    "default_registry",
    "flag_column",
    "format_timestamp",
    "json_column",
    "lookup_keys",
    "projected_fields",
    "registry_from_settings",
    "set_column",
    "sync_hash",
    "through_child",
]


def default_registry() -> ProjectorRegistry:
    """A new registry of the default settings' projectors (the built-in wiki_page)."""
    return registry_from_settings(ProjectionSettings())
