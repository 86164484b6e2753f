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
    schema, deleted = body["projection_schema_version"], body["is_deleted"]
    return IndexEntry(doc_id, version, None, schema, deleted, None, body["sync_hash"])


def full(doc_id: str) -> IndexEntry:
    version, body = DOCS[doc_id]
    schema, deleted = body["projection_schema_version"], body["is_deleted"]
    return IndexEntry(
        doc_id, version, body["projection_hash"], schema, deleted, body, body["sync_hash"]
    )


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


async def side_strays_are_the_documents_outside_the_key_space(h: ReadBackend) -> None:
    version, keyless = doc("f", 4, 0, deleted=True)
    keyless.pop("sync_hash")
    outside = {"f": (version, keyless), "g": doc("g", 2, -1), "h": doc("h", 6, 2**32)}
    alias, _ = await filled(h, DOCS | outside)
    pages = [page async for page in h.side.strays(alias, 2)]
    assert [len(page) for page in pages] == [2, 1]  # in an order of the side's own
    got = sorted((e for page in pages for e in page), key=lambda e: e.id)
    schema = keyless["projection_schema_version"]
    assert got == [
        IndexEntry("f", 4, None, schema, True, None, None),
        IndexEntry("g", 2, None, schema, False, None, -1),
        IndexEntry("h", 6, None, schema, False, None, 2**32),
    ]
    assert [len(page) async for page in h.side.strays(alias, 3)] == [3]  # no empty last page
    empty, _ = await filled(h, DOCS)
    assert [page async for page in h.side.strays(empty, 2)] == []


INDEX_SIDE_CASES: list[Callable[[ReadBackend], Awaitable[None]]] = [
    side_pages_a_key_range_by_id,
    side_reads_content_when_asked,
    side_by_ids_finds_what_exists,
    side_strays_are_the_documents_outside_the_key_space,
]
