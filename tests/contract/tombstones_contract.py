"""The purge's part of the `SearchEngine` contract: the tombstone scan and its guarded deletes.

Every case takes a `TombstoneBackend` and runs unchanged against the fake (tests/unit) and a real
node (tests/integration). The documents are the contract's own: ``is_deleted``,
``tombstoned_at`` and a title.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from searchsync.search.port import SearchEngine
from searchsync.search.tombstones import DeleteResult

OLD = "2020-01-01T00:00:00.000Z"
BEFORE = "2025-01-01T00:00:00.000Z"
YOUNG = "2026-01-01T00:00:00.000Z"

MAPPING: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "title": {"type": "text"},
        "is_deleted": {"type": "boolean"},
        "tombstoned_at": {"type": "date"},
    },
}


class TombstoneBackend(Protocol):
    store: SearchEngine

    async def new_index(self, *, tombstoned_at: bool = True) -> str:
        """A new empty physical index, its mapping with or without ``tombstoned_at``."""
        ...

    async def put(self, index: str, doc_id: str, body: dict[str, Any]) -> None:
        """Write a document; the next scan sees it."""
        ...

    async def ids(self, index: str) -> list[str]:
        """The ids of every document of `index`, sorted."""
        ...


def tombstone(at: str | None) -> dict[str, Any]:
    return {"is_deleted": True} if at is None else {"is_deleted": True, "tombstoned_at": at}


async def _old_tombstones(h: TombstoneBackend, count: int) -> str:
    index = await h.new_index()
    for i in range(count):
        await h.put(index, f"old{i}", tombstone(OLD))
    return index


async def scan_pages_only_the_tombstones_before_the_cutoff(h: TombstoneBackend) -> None:
    index = await _old_tombstones(h, 5)
    await h.put(index, "young", tombstone(YOUNG))
    await h.put(index, "ageless", tombstone(None))  # never purged
    await h.put(index, "live", {"is_deleted": False, "title": "t", "tombstoned_at": OLD})
    pages = [page async for page in h.store.scan_tombstones(index, BEFORE, 2)]
    assert [len(p) for p in pages] == [2, 2, 1]
    hits = [hit for page in pages for hit in page]
    assert sorted(h.doc_id for h in hits) == [f"old{i}" for i in range(5)]
    assert {h.tombstoned_at for h in hits} == {OLD}
    assert [page async for page in h.store.scan_tombstones(await h.new_index(), BEFORE, 2)] == []


async def delete_removes_what_the_scan_saw_and_keeps_what_changed(h: TombstoneBackend) -> None:
    index = await _old_tombstones(h, 4)
    hits = [
        hit
        for page in [p async for p in h.store.scan_tombstones(index, BEFORE, 10)]
        for hit in page
    ]
    await h.put(index, "old0", {"is_deleted": False, "title": "again"})  # re-created since
    outcomes = await h.store.delete_tombstones(index, hits)
    assert [o.hit for o in outcomes] == hits  # one outcome per hit, in order
    results = {o.hit.doc_id: o.result for o in outcomes}
    assert results.pop("old0") is DeleteResult.CHANGED
    assert set(results.values()) == {DeleteResult.DELETED}
    assert await h.ids(index) == ["old0"]
    assert await h.store.delete_tombstones(index, []) == []
    again = await h.store.delete_tombstones(
        index, [o.hit for o in outcomes if o.hit.doc_id != "old0"]
    )
    assert {o.result for o in again} == {DeleteResult.GONE}  # deleted already: not "changed"


async def maps_tombstoned_at_reads_the_mapping(h: TombstoneBackend) -> None:
    assert await h.store.maps_tombstoned_at(await h.new_index())
    assert not await h.store.maps_tombstoned_at(await h.new_index(tombstoned_at=False))


TOMBSTONE_CASES: list[Callable[[TombstoneBackend], Awaitable[None]]] = [
    scan_pages_only_the_tombstones_before_the_cutoff,
    delete_removes_what_the_scan_saw_and_keeps_what_changed,
    maps_tombstoned_at_reads_the_mapping,
]
