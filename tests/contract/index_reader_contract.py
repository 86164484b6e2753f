"""The `SearchEngine` reads contract: what the rebuild's verification reads from a physical index.

Every case takes a `Backend` and runs unchanged against the fake (tests/unit) and a real
node (tests/integration).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from searchsync.errors import TransientError
from searchsync.search.port import StoredDocument

from tests.contract.index_read_backend import doc, filled
from tests.contract.search_backend import Backend, physical

DOCS = {
    "a": doc("a", 3, 1, title="red apple"),
    "b": doc("b", 1, 2, title="green apple", schema=7),
    "c": doc("c", 2, 3, title="red car"),
    "d": doc("d", 4, 4, deleted=True, schema=7),
    "e": doc("e", 1, 5, title="blue sky"),
}


async def reader_counts_and_lists_deleted_and_other_schema(h: Backend) -> None:
    _, index = await filled(h, DOCS)
    assert await h.index.count(index) == 5
    assert await h.index.deleted_ids(index) == ["d"]
    assert await h.index.other_schema(index, 1) == [("b", 1), ("d", 4)]
    assert await h.index.other_schema(index, 7) == [("a", 3), ("c", 2), ("e", 1)]
    with pytest.raises(TransientError):
        await h.index.count(physical(h.fresh_alias()))


async def reader_samples_stored_documents_the_same_for_a_seed(h: Backend) -> None:
    _, index = await filled(h, DOCS)
    chosen = await h.index.sample(index, 3, seed=7)
    assert len(chosen) == 3 and len({s.doc_id for s in chosen}) == 3
    for stored in chosen:
        version, body = DOCS[stored.doc_id]
        assert stored == StoredDocument(stored.doc_id, version, body)
    assert await h.index.sample(index, 3, seed=7) == chosen
    every = await h.index.sample(index, 10, seed=1)
    assert sorted(s.doc_id for s in every) == sorted(DOCS)


async def reader_top_ids_match_every_word_of_live_documents(h: Backend) -> None:
    _, index = await filled(h, {**DOCS, "f": doc("f", 1, 6, title="red apple pie")})
    assert sorted(await h.index.top_ids(index, "title", "apple", 10)) == ["a", "b", "f"]
    assert sorted(await h.index.top_ids(index, "title", "Red APPLE", 10)) == ["a", "f"]
    assert await h.index.top_ids(index, "title", "red sky", 10) == []
    [best] = await h.index.top_ids(index, "title", "apple", 1)
    assert best in {"a", "b", "f"}


INDEX_READER_CASES: list[Callable[[Backend], Awaitable[None]]] = [
    reader_counts_and_lists_deleted_and_other_schema,
    reader_samples_stored_documents_the_same_for_a_seed,
    reader_top_ids_match_every_word_of_live_documents,
]
