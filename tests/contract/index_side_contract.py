"""The repair wheel's reads of a `SearchEngine`, through the alias, as the wheel sees them.

Every case takes a `Backend` and runs unchanged against the fake (tests/unit) and a real
node (tests/integration).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from searchsync.ops.repair.model import IndexEntry, entry_of
from searchsync.types import BucketCursor

from tests.contract.index_read_backend import doc, filled
from tests.contract.search_backend import Backend

# ids in another order than their sync_hash: pages follow the id
DOCS = {
    "a": doc("a", 3, 40),
    "b": doc("b", 1, 10),
    "c": doc("c", 2, 30, deleted=True),
    "d": doc("d", 5, 20, schema=7),
    "e": doc("e", 1, 50),
}


async def page(
    h: Backend, alias: str, lo: int, hi: int, after: BucketCursor | None, n: int, *, content: bool
) -> list[IndexEntry]:
    found = await h.index.bucket_page(alias, lo, hi, after, n, content=content)
    return [entry_of(d, content=content) for d in found]


async def by_ids(h: Backend, alias: str, ids: list[str]) -> dict[str, IndexEntry]:
    found = await h.index.get_documents(alias, ids)
    return {i: entry_of(d, content=True) for i, d in found.items() if d is not None}


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


async def side_pages_a_key_range_by_id(h: Backend) -> None:
    alias, _ = await filled(h, DOCS)
    first = await page(h, alias, 10, 45, None, 2, content=False)
    assert first == [light("a"), light("b")]
    second = await page(h, alias, 10, 45, (10, "b"), 2, content=False)
    assert second == [light("c"), light("d")]
    assert await page(h, alias, 10, 45, (20, "d"), 2, content=False) == []
    assert await page(h, alias, 41, 50, None, 10, content=False) == []  # hi excluded


async def side_reads_content_when_asked(h: Backend) -> None:
    alias, _ = await filled(h, DOCS)
    assert await page(h, alias, 0, 100, None, 10, content=True) == [full(i) for i in "abcde"]


async def side_by_ids_finds_what_exists(h: Backend) -> None:
    alias, _ = await filled(h, DOCS)
    assert await by_ids(h, alias, ["d", "nope", "a", "d"]) == {"a": full("a"), "d": full("d")}
    assert await by_ids(h, alias, []) == {}


async def side_strays_are_the_documents_outside_the_key_space(h: Backend) -> None:
    version, keyless = doc("f", 4, 0, deleted=True)
    keyless.pop("sync_hash")
    outside = {"f": (version, keyless), "g": doc("g", 2, -1), "h": doc("h", 6, 2**32)}
    alias, _ = await filled(h, DOCS | outside)
    pages = [page async for page in h.index.strays(alias, 2)]
    assert [len(page) for page in pages] == [2, 1]  # in an order of the side's own
    got = sorted((entry_of(d, content=False) for p in pages for d in p), key=lambda e: e.id)
    schema = keyless["projection_schema_version"]
    assert got == [
        IndexEntry("f", 4, None, schema, True, None, None),
        IndexEntry("g", 2, None, schema, False, None, -1),
        IndexEntry("h", 6, None, schema, False, None, 2**32),
    ]
    assert [len(page) async for page in h.index.strays(alias, 3)] == [3]  # no empty last page
    empty, _ = await filled(h, DOCS)
    assert [page async for page in h.index.strays(empty, 2)] == []


INDEX_SIDE_CASES: list[Callable[[Backend], Awaitable[None]]] = [
    side_pages_a_key_range_by_id,
    side_reads_content_when_asked,
    side_by_ids_finds_what_exists,
    side_strays_are_the_documents_outside_the_key_space,
]
