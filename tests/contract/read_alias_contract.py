"""The read alias (docs/design.md, invariant 15): the contract every backend keeps.

A write alias ``A`` comes with ``A_live``: the same index filtered on ``is_deleted: false``,
never a write target, moved with ``A`` in the same ``_aliases`` call by a swap and a rollback.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from searchsync.naming import read_alias_name
from searchsync.ops.indices import list_alias, rollback
from searchsync.search.admin import describe
from searchsync.search.port import SCHEMA_VERSION_META
from searchsync.search.sink import OutcomeKind

from tests.contract.search_backend import MAPPING, Backend, new_alias, op, physical, write

_ALL = {"match_all": {}}


async def _ids(h: Backend, alias: str) -> list[str]:
    await h.index.refresh(alias)  # the test's own refresh: searches see the last one
    return sorted(hit.doc_id for hit in await h.index.search(alias, _ALL, size=100))


async def read_alias_hides_tombstones_and_takes_no_writes(h: Backend) -> None:
    alias = await new_alias(h)
    read = read_alias_name(alias)
    await write(h, op(alias, "live", 1), op(alias, "gone", 2, deleted=True), op(alias, "c", 1))
    await write(h, op(alias, "c", 2, deleted=True))
    assert await _ids(h, alias) == ["c", "gone", "live"]  # the tombstones are in the index
    assert await _ids(h, read) == ["live"]
    [hit] = await h.index.search(read, {"ids": {"values": ["live", "c"]}}, size=10)
    assert (hit.doc_id, hit.version, hit.source["is_deleted"]) == ("live", 1, False)
    [refused] = await write(h, op(read, "x", 1))  # nothing writes through the read alias
    assert refused.kind is not OutcomeKind.APPLIED
    assert await h.stored(alias, "x") is None
    [info] = await h.admin.list_indices(alias)
    assert (info.aliased, info.is_write_index, info.read_aliased) == (True, True, True)
    assert (await describe(h.admin, alias)).read_indices == (physical(alias),)


async def read_alias_moves_with_the_swap_and_the_rollback(h: Backend) -> None:
    alias = await new_alias(h)
    read = read_alias_name(alias)
    v1, v2 = physical(alias, 1), physical(alias, 2)
    await write(h, op(alias, "a", 1), op(alias, "b", 1))
    await h.admin.create_index(v2, MAPPING, meta={SCHEMA_VERSION_META: 1})
    builder = h.fresh_alias()  # fills v2 the way a test can: through its own alias
    await h.admin.put_alias(builder, v2)
    await write(h, op(builder, "a", 2, deleted=True), op(builder, "b", 2), op(builder, "n", 1))
    assert await _ids(h, read) == ["a", "b"]  # still v1
    await h.admin.swap_alias(alias, old=v1, new=v2)
    listing = await list_alias(h.admin, alias)
    assert [(r.name, r.is_write_index, r.read_aliased) for r in listing.indices] == [
        (v1, False, False),
        (v2, True, True),
    ]
    assert await _ids(h, read) == ["b", "n"]  # v2's live documents only
    back = await rollback(h.admin, alias)
    assert (back.from_index, back.to_index) == (v2, v1) and read in back.message
    assert await _ids(h, read) == ["a", "b"]
    assert (await describe(h.admin, alias)).read_indices == (v1,)


READ_ALIAS_CASES: list[Callable[[Backend], Awaitable[None]]] = [
    read_alias_hides_tombstones_and_takes_no_writes,
    read_alias_moves_with_the_swap_and_the_rollback,
]
