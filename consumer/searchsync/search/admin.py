"""Index bootstrap (docs/design.md, invariant 7): `init_index` creates ``<alias>_v1`` with mapping,
``_meta`` and both aliases in one call, aliases a hand-made ``<alias>_v1``, adds a missing read
alias, and refuses (`ConfigError`) an index named like the alias. Idempotent and safe to run
concurrently."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from elasticsearch import AsyncElasticsearch

from searchsync import naming
from searchsync.errors import ConfigError, IndexAdminError, IndexExists
from searchsync.search.elasticsearch import EsIndexAdmin
from searchsync.search.engine_modules import missing_module
from searchsync.search.port import SCHEMA_VERSION_META, IndexAdmin


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


def index_meta(mapping: Mapping[str, Any], schema_version: int | None) -> dict[str, Any]:
    """The ``_meta`` an index is created with: the mapping's own, plus `schema_version`."""
    meta = dict(mapping.get("mappings", {}).get("_meta", {}))
    if schema_version is not None:
        meta[SCHEMA_VERSION_META] = schema_version
    meta.setdefault("created_by", "searchsync index init")
    return meta


async def describe(client: AsyncElasticsearch | IndexAdmin, alias: str) -> AliasDescription:
    listed = await _admin(client).list_indices(alias)
    indices = tuple(sorted(i.name for i in listed if i.aliased))
    writer = next((i.name for i in listed if i.is_write_index), None)
    reads = tuple(sorted(i.name for i in listed if i.read_aliased))
    read = naming.read_alias_name(alias)
    return AliasDescription(alias, bool(indices), indices, writer, read, reads)


async def init_index(
    client: AsyncElasticsearch | IndexAdmin,
    alias: str,
    mapping: Mapping[str, Any],
    *,
    dry_run: bool = False,
    schema_version: int | None = None,
) -> InitResult:
    """Create ``<alias>_v1`` with `mapping` behind `alias` unless the alias exists;
    ``_meta.projection_schema_version`` is `schema_version` when given."""
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
        physical = naming.physical_name(alias, 1)
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
        except Exception as exc:  # a mapping that needs a module the engine lacks: name it
            lacking = missing_module(str(exc))
            if lacking is None:
                raise
            raise IndexAdminError(physical, lacking) from exc
        return InitResult(alias, physical, InitAction.CREATED)
    raise RuntimeError(f"init_index {alias}: state kept changing under us")


def _admin(client: AsyncElasticsearch | IndexAdmin) -> IndexAdmin:
    return EsIndexAdmin(client) if isinstance(client, AsyncElasticsearch) else client
