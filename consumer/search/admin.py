"""Index bootstrap: make sure a write alias exists over a physical index (DESIGN.md invariant 7).

The hot path writes with ``require_alias=true`` and never creates an index; an operator (or the
deployment) runs `init_index` once per aggregate type. It is idempotent and safe to run
concurrently with itself:

- the alias exists: nothing to do; report the physical index it writes to;
- neither the alias nor ``<alias>_v1`` exists: create ``<alias>_v1`` with the mapping and the
  alias (``is_write_index: true``) in one create-index call, so no moment has an index
  without its alias;
- ``<alias>_v1`` exists without the alias (created by hand): add the alias;
- a concrete index is named like the alias: refuse (`ConfigError`), an operator must decide.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from elasticsearch import AsyncElasticsearch, BadRequestError

from consumer.errors import ConfigError

__all__ = ["AliasDescription", "InitAction", "InitResult", "describe", "init_index"]


class InitAction(enum.Enum):
    EXISTS = "exists"
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


def first_index_name(alias: str) -> str:
    """The physical index of a fresh install: ``<alias>_v1``."""
    return f"{alias}_v1"


async def describe(client: AsyncElasticsearch, alias: str) -> AliasDescription:
    """Which physical indices `alias` points at, and which one takes its writes."""
    if not await client.indices.exists_alias(name=alias):
        return AliasDescription(alias, False, (), None)
    response = await client.indices.get_alias(name=alias)
    indices = tuple(sorted(response.body))
    write_index = None
    for index, info in response.body.items():
        if info.get("aliases", {}).get(alias, {}).get("is_write_index"):
            write_index = index
    if write_index is None and len(indices) == 1:
        write_index = indices[0]
    return AliasDescription(alias, True, indices, write_index)


async def init_index(
    client: AsyncElasticsearch,
    alias: str,
    mapping: Mapping[str, Any],
    *,
    dry_run: bool = False,
) -> InitResult:
    """Create ``<alias>_v1`` with `mapping` behind `alias` unless the alias already exists."""
    for _ in range(3):  # a concurrent init may win a race; look again
        current = await describe(client, alias)
        if current.exists:
            return InitResult(alias, current.write_index or "", InitAction.EXISTS)
        if await client.indices.exists(index=alias):
            raise ConfigError("alias", "a name free for an alias", f"{alias} is an index")
        physical = first_index_name(alias)
        if await client.indices.exists(index=physical):
            if dry_run:
                return InitResult(alias, physical, InitAction.WOULD_ADD_ALIAS)
            await client.indices.update_aliases(
                actions=[{"add": {"index": physical, "alias": alias, "is_write_index": True}}]
            )
            return InitResult(alias, physical, InitAction.ALIAS_ADDED)
        if dry_run:
            return InitResult(alias, physical, InitAction.WOULD_CREATE)
        try:
            await client.indices.create(
                index=physical,
                settings=dict(mapping.get("settings", {})),
                mappings=dict(mapping["mappings"]),
                aliases={alias: {"is_write_index": True}},
            )
        except BadRequestError as exc:
            if _error_type(exc) != "resource_already_exists_exception":
                raise
            continue
        return InitResult(alias, physical, InitAction.CREATED)
    raise RuntimeError(f"init_index {alias}: state kept changing under us")


def _error_type(exc: BadRequestError) -> str | None:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        value = body["error"].get("type")
        return value if isinstance(value, str) else None
    return None
