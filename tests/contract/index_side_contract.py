"""The `IndexSide` contract: what the repair wheel reads from the index, through the alias.

Every case takes a `ReadBackend` and runs unchanged against the fake (tests/unit) and a real
node (tests/integration).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from searchsync.ops.repair.model import IndexEntry

from tests.contract.index_read_backend import ReadBackend, doc, filled

# ids in another order than their sync_hash: pages follow the id
DOCS = {
    "a": doc("a", 3, 40),
    "b": doc("b", 1, 10),
    "c": doc("c", 2, 30, deleted=True),
    "d": doc("d", 5, 20, schema=7),
    "e": doc("e", 1, 50),
}


def light(doc_id: str) -> IndexEntry:
    version, body = DOCS[doc_id]
    return IndexEntry(
        doc_id, version, None, body["projection_schema_version"], body["is_deleted"], None
    )


def full(doc_id: str) -> IndexEntry:
    version, body = DOCS[doc_id]
    schema, deleted = body["projection_schema_version"], body["is_deleted"]
    return IndexEntry(doc_id, version, body["projection_hash"], schema, deleted, body)


async def side_pages_a_key_range_by_id(h: ReadBackend) -> None:
    alias, _ = await filled(h, DOCS)
    first = await h.side.bucket_page(alias, 10, 45, None, 2, content=False)
    assert first == [light("a"), light("b")]
    second = await h.side.bucket_page(alias, 10, 45, (10, "b"), 2, content=False)
    assert second == [light("c"), light("d")]
    assert await h.side.bucket_page(alias, 10, 45, (20, "d"), 2, content=False) == []
    assert await h.side.bucket_page(alias, 41, 50, None, 10, content=False) == []  # hi excluded


async def side_reads_content_when_asked(h: ReadBackend) -> None:
    alias, _ = await filled(h, DOCS)
    page = await h.side.bucket_page(alias, 0, 100, None, 10, content=True)
    assert page == [full(i) for i in "abcde"]


async def side_by_ids_finds_what_exists(h: ReadBackend) -> None:
    alias, _ = await filled(h, DOCS)
    assert await h.side.by_ids(alias, ["d", "nope", "a", "d"]) == {"a": full("a"), "d": full("d")}
    assert await h.side.by_ids(alias, []) == {}


INDEX_SIDE_CASES: list[Callable[[ReadBackend], Awaitable[None]]] = [
    side_pages_a_key_range_by_id,
    side_reads_content_when_asked,
    side_by_ids_finds_what_exists,
]
