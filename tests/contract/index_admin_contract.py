"""The `IndexAdmin` contract, and `init_index`/`describe` on top of it.

Every case takes a `Backend` and runs unchanged against the fake and a real node.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import pytest
from searchsync.errors import (
    AliasConflict,
    ConfigError,
    IndexAdminError,
    IndexExists,
    IndexMissing,
)
from searchsync.search.admin import InitAction, describe, init_index
from searchsync.search.port import SCHEMA_VERSION_META, IndexInfo, WriteIndex
from searchsync.search.sink import OutcomeKind

from tests.contract.search_backend import MAPPING, Backend, new_alias, op, physical, write

# The node and the test share a machine; a generous window only catches a wrong unit or zone.
_CLOCK_SLACK = timedelta(minutes=10)


def _shape(info: IndexInfo) -> tuple[str, int | None, int, int | None, bool, bool]:
    return (
        info.name,
        info.version,
        info.docs,
        info.schema_version,
        info.aliased,
        info.is_write_index,
    )


async def admin_create_index_keeps_meta(h: Backend) -> None:
    alias = h.fresh_alias()
    v1 = physical(alias)
    body = {**MAPPING, "mappings": {**MAPPING["mappings"], "_meta": {"owner": "x", "n": 1}}}
    await h.admin.create_index(v1, body, meta={SCHEMA_VERSION_META: 3, "n": 2})
    assert await h.admin.exists(v1) and not await h.admin.exists(alias)
    [info] = await h.admin.list_indices(alias)
    assert _shape(info) == (v1, 1, 0, 3, False, False)
    assert dict(info.meta) == {"owner": "x", "n": 2, SCHEMA_VERSION_META: 3}
    assert (info.replicas, info.refresh_interval) == (0, "1s")
    assert info.created_at.tzinfo is not None and info.created_at.utcoffset() == timedelta(0)
    assert abs(datetime.now(UTC) - info.created_at) < _CLOCK_SLACK
    assert await h.admin.write_index(alias) is None
    with pytest.raises(IndexExists):
        await h.admin.create_index(v1, MAPPING)


async def admin_create_with_alias_and_put_alias(h: Backend) -> None:
    alias = await new_alias(h, schema_version=4)
    v1, v2 = physical(alias, 1), physical(alias, 2)
    assert await h.admin.write_index(alias) == WriteIndex(alias, v1, {SCHEMA_VERSION_META: 4})
    assert await h.admin.exists(alias)
    with pytest.raises(IndexExists):  # the alias's name is taken
        await h.admin.create_index(alias, MAPPING)
    await h.admin.create_index(v2, MAPPING)
    with pytest.raises(AliasConflict):  # v1 is the write index: that is a swap
        await h.admin.put_alias(alias, v2)
    writer = await h.admin.write_index(alias)
    assert writer is not None and writer.index == v1
    other = h.fresh_alias()
    await h.admin.put_alias(other, v2)
    writer = await h.admin.write_index(other)
    assert writer is not None and (writer.index, writer.schema_version) == (v2, None)
    with pytest.raises(IndexMissing):
        await h.admin.put_alias(h.fresh_alias(), physical(alias, 9))
    with pytest.raises(IndexExists):  # an index's name cannot be an alias
        await h.admin.put_alias(v1, v2)


async def admin_swap_is_atomic_and_leaves_one_write_index(h: Backend) -> None:
    alias = await new_alias(h, schema_version=1)
    v1, v2 = physical(alias, 1), physical(alias, 2)
    await write(h, op(alias, "a", 1))
    builder = h.fresh_alias()  # how a rebuild fills the new index: through its own alias
    await h.admin.create_index(v2, MAPPING, meta={SCHEMA_VERSION_META: 2}, alias=builder)
    await write(h, op(builder, "b", 1))
    await h.admin.swap_alias(alias, old=v1, new=v2)
    infos = await h.admin.list_indices(alias)
    assert [(i.name, i.aliased, i.is_write_index) for i in infos] == [
        (v1, False, False),
        (v2, True, True),
    ]
    writer = await h.admin.write_index(alias)
    assert writer is not None and (writer.index, writer.schema_version) == (v2, 2)
    assert await h.index.get_versions(alias, ["a", "b"]) == {"a": None, "b": 1}
    [outcome] = await write(h, op(alias, "c", 1))
    assert outcome.kind is OutcomeKind.APPLIED
    assert await h.stored(alias, "c") is not None
    [refused] = await write(h, op(v1, "d", 1))  # require_alias: the old index is no target
    assert (refused.kind, refused.code) == (OutcomeKind.FAILED, "ALIAS_MISSING")
    with pytest.raises(AliasConflict):  # v1 no longer holds the alias: nothing changes
        await h.admin.swap_alias(alias, old=v1, new=v1)
    with pytest.raises(IndexMissing):
        await h.admin.swap_alias(alias, old=v2, new=physical(alias, 3))
    writer = await h.admin.write_index(alias)
    assert writer is not None and writer.index == v2
    assert sum(i.is_write_index for i in await h.admin.list_indices(alias)) == 1


async def admin_list_indices_counts_docs_and_reads_schema_versions(h: Backend) -> None:
    alias = await new_alias(h, schema_version=1)
    v1, v2 = physical(alias, 1), physical(alias, 2)
    await write(h, op(alias, "a", 1), op(alias, "b", 1), op(alias, "c", 1))
    builder = h.fresh_alias()
    await h.admin.create_index(v2, MAPPING, meta={SCHEMA_VERSION_META: 2}, alias=builder)
    await write(h, op(builder, "a", 1))
    for unrelated in (f"{alias}_v2_copy", f"{alias}_v01", f"{alias}x_v1"):
        await h.admin.create_index(unrelated, MAPPING)
    for name in (v1, v2):
        await h.index.refresh(name)
    infos = await h.admin.list_indices(alias)
    assert [_shape(i) for i in infos] == [
        (v1, 1, 3, 1, True, True),
        (v2, 2, 1, 2, False, False),
    ]
    assert infos[0].created_at <= infos[1].created_at
    assert await h.admin.list_indices(h.fresh_alias()) == []
    hand_made = h.fresh_alias()  # an alias over an index not named <alias>_v<N> is listed too
    await h.admin.create_index(f"{hand_made}_manual", MAPPING, alias=hand_made)
    [manual] = await h.admin.list_indices(hand_made)
    assert _shape(manual) == (f"{hand_made}_manual", None, 0, None, True, True)


async def admin_write_index_is_none_for_what_is_not_an_alias(h: Backend) -> None:
    alias = await new_alias(h)
    assert await h.admin.write_index(h.fresh_alias()) is None
    assert await h.admin.write_index(physical(alias)) is None


async def admin_delete_index_removes_it_and_its_aliases(h: Backend) -> None:
    alias = await new_alias(h)
    v1, v2 = physical(alias, 1), physical(alias, 2)
    await h.admin.create_index(v2, MAPPING)
    with pytest.raises(IndexAdminError) as refused:  # an alias is not an index
        await h.admin.delete_index(alias)
    assert not isinstance(refused.value, IndexMissing)
    assert await h.admin.exists(alias)
    await h.admin.delete_index(v1)  # the write index: the port itself refuses nothing
    assert not await h.admin.exists(v1) and not await h.admin.exists(alias)
    assert await h.admin.write_index(alias) is None
    assert [i.name for i in await h.admin.list_indices(alias)] == [v2]
    with pytest.raises(IndexMissing):
        await h.admin.delete_index(v1)


async def admin_update_settings(h: Backend) -> None:
    alias = await new_alias(h)
    v1 = physical(alias)
    await h.admin.update_settings(v1, refresh_interval="-1", replicas=0)
    [info] = await h.admin.list_indices(alias)
    assert (info.refresh_interval, info.replicas) == ("-1", 0)
    await h.admin.update_settings(alias, refresh_interval="30s")  # through the alias
    await h.admin.update_settings(v1)  # nothing asked, nothing changed
    [info] = await h.admin.list_indices(alias)
    assert (info.refresh_interval, info.replicas) == ("30s", 0)
    with pytest.raises(IndexMissing):
        await h.admin.update_settings(physical(alias, 2), refresh_interval="1s")


async def init_index_is_idempotent_and_writes_the_schema_version(h: Backend) -> None:
    alias = h.fresh_alias()
    dry = await init_index(h.admin, alias, MAPPING, dry_run=True, schema_version=7)
    assert (dry.action, dry.index) == (InitAction.WOULD_CREATE, physical(alias))
    assert not await h.admin.exists(physical(alias))
    assert not (await describe(h.admin, alias)).exists
    first = await init_index(h.admin, alias, MAPPING, schema_version=7)
    second = await init_index(h.admin, alias, MAPPING, schema_version=7)
    assert (first.action, first.index) == (InitAction.CREATED, physical(alias))
    assert (second.action, second.index) == (InitAction.EXISTS, physical(alias))
    description = await describe(h.admin, alias)
    assert description.exists and description.indices == (physical(alias),)
    assert description.write_index == physical(alias)
    writer = await h.admin.write_index(alias)
    assert writer is not None and writer.schema_version == 7


async def init_index_adds_the_alias_to_an_orphan_v1(h: Backend) -> None:
    alias = h.fresh_alias()
    await h.admin.create_index(physical(alias), MAPPING)
    dry = await init_index(h.admin, alias, MAPPING, dry_run=True)
    assert dry.action is InitAction.WOULD_ADD_ALIAS
    assert not await h.admin.exists(alias)
    result = await init_index(h.admin, alias, MAPPING)
    assert result.action is InitAction.ALIAS_ADDED
    assert (await describe(h.admin, alias)).write_index == physical(alias)


async def init_index_refuses_a_concrete_index_named_like_the_alias(h: Backend) -> None:
    alias = h.fresh_alias()
    await h.admin.create_index(alias, MAPPING)
    with pytest.raises(ConfigError):
        await init_index(h.admin, alias, MAPPING)
    assert not await h.admin.exists(physical(alias))


INDEX_ADMIN_CASES: list[Callable[[Backend], Awaitable[None]]] = [
    admin_create_index_keeps_meta,
    admin_create_with_alias_and_put_alias,
    admin_swap_is_atomic_and_leaves_one_write_index,
    admin_list_indices_counts_docs_and_reads_schema_versions,
    admin_write_index_is_none_for_what_is_not_an_alias,
    admin_delete_index_removes_it_and_its_aliases,
    admin_update_settings,
    init_index_is_idempotent_and_writes_the_schema_version,
    init_index_adds_the_alias_to_an_orphan_v1,
    init_index_refuses_a_concrete_index_named_like_the_alias,
]
