"""Index bootstrap: make sure a write alias exists over a physical index (docs/design.md,
invariant 7).

The hot path writes with ``require_alias=true`` and never creates an index; an operator (or the
deployment) runs `init_index` once per aggregate type. It is idempotent and safe to run
concurrently with itself:

- the alias exists: nothing to do, but for the read alias ``<alias>_live`` (invariant 15) of an
  install older than it: that is pointed at the write index (`InitAction.READ_ALIAS_ADDED`);
- neither the alias nor ``<alias>_v1`` exists: create ``<alias>_v1`` with the mapping, its
  ``_meta`` (``projection_schema_version``), the alias (``is_write_index: true``) and the read
  alias in one create-index call, so no moment has an index without its aliases;
- ``<alias>_v1`` exists without the alias (created by hand): add the alias;
- a concrete index is named like the alias: refuse (`ConfigError`), an operator must decide.

Both functions take an `IndexAdmin`, or a client of either engine (`make_es_client`'s; wrapped
in `EsIndexAdmin`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from elasticsearch import AsyncElasticsearch

from searchsync import naming
from searchsync.errors import ConfigError
from searchsync.search.elasticsearch import EsIndexAdmin
from searchsync.search.opensearch import OpenSearchClient
from searchsync.search.port import SCHEMA_VERSION_META, IndexAdmin, IndexExists

__all__ = [
    "AliasDescription",
    "InitAction",
    "InitResult",
    "describe",
    "first_index_name",
    "index_meta",
    "init_index",
]


class InitAction(enum.Enum):
    EXISTS = "exists"
    READ_ALIAS_ADDED = "read_alias_added"
    WOULD_ADD_READ_ALIAS = "would_add_read_alias"
    CREATED = "created"
    ALIAS_ADDED = "alias_added"
    WOULD_CREATE = "would_create"
    WOULD_ADD_ALIAS = "would_add_alias"


@dataclass(frozen=True, slots=True)
class InitResult:
    alias: str
    index: str  # the physical index the alias writes to (or would)
    action: InitAction


@dataclass(frozen=True, slots=True)
class AliasDescription:
    alias: str
    exists: bool
    indices: tuple[str, ...]  # every index the alias points at, sorted
    write_index: str | None  # where writes go (the only index, or the is_write_index one)
    read_alias: str  # <alias>_live: the same index without tombstones, what readers query
    read_indices: tuple[str, ...] = ()  # every index the read alias points at, sorted


def first_index_name(alias: str) -> str:
    """The physical index of a fresh install: ``<alias>_v1`` (see `searchsync.naming`)."""
    return naming.first_physical_name(alias)


def index_meta(mapping: Mapping[str, Any], schema_version: int | None) -> dict[str, Any]:
    """The ``_meta`` an index is created with: the mapping's own, plus `schema_version`."""
    meta = dict(mapping.get("mappings", {}).get("_meta", {}))
    if schema_version is not None:
        meta[SCHEMA_VERSION_META] = schema_version
    meta.setdefault("created_by", "searchsync index init")
    return meta


async def describe(client: AsyncElasticsearch | IndexAdmin, alias: str) -> AliasDescription:
    """Which physical indices `alias` points at, and which one takes its writes."""
    admin = _admin(client)
    listed = await admin.list_indices(alias)
    indices = tuple(sorted(i.name for i in listed if i.aliased))
    reads = tuple(sorted(i.name for i in listed if i.read_aliased))
    read = naming.read_alias_name(alias)
    if not indices:
        return AliasDescription(alias, False, (), None, read, reads)
    writer = await admin.write_index(alias)
    return AliasDescription(
        alias, True, indices, None if writer is None else writer.index, read, reads
    )


async def init_index(
    client: AsyncElasticsearch | IndexAdmin,
    alias: str,
    mapping: Mapping[str, Any],
    *,
    dry_run: bool = False,
    schema_version: int | None = None,
) -> InitResult:
    """Create ``<alias>_v1`` with `mapping` behind `alias` unless the alias already exists.

    The index's ``_meta`` gets ``projection_schema_version = schema_version`` (pass the
    projector's); without it, the mapping's own ``_meta`` value, if any, is kept.
    """
    admin = _admin(client)
    meta = index_meta(mapping, schema_version)
    for _ in range(3):  # a concurrent init may win a race; look again
        current = await describe(admin, alias)
        if current.exists:
            writer = current.write_index or ""
            if not writer or writer in current.read_indices:
                return InitResult(alias, writer, InitAction.EXISTS)
            if dry_run:
                return InitResult(alias, writer, InitAction.WOULD_ADD_READ_ALIAS)
            await admin.put_alias(alias, writer)  # points the read alias at it as well
            return InitResult(alias, writer, InitAction.READ_ALIAS_ADDED)
        if await admin.exists(alias):
            raise ConfigError("alias", "a name free for an alias", f"{alias} is an index")
        physical = first_index_name(alias)
        if await admin.exists(physical):
            if dry_run:
                return InitResult(alias, physical, InitAction.WOULD_ADD_ALIAS)
            await admin.put_alias(alias, physical)
            return InitResult(alias, physical, InitAction.ALIAS_ADDED)
        if dry_run:
            return InitResult(alias, physical, InitAction.WOULD_CREATE)
        try:
            await admin.create_index(physical, mapping, meta=meta, alias=alias)
        except IndexExists:
            continue
        return InitResult(alias, physical, InitAction.CREATED)
    raise RuntimeError(f"init_index {alias}: state kept changing under us")


def _admin(client: AsyncElasticsearch | IndexAdmin) -> IndexAdmin:
    if isinstance(client, AsyncElasticsearch | OpenSearchClient):
        return EsIndexAdmin(client)
    return client
