"""The tombstone purge's part of the `SearchEngine` fake (`tests.fakes.search_index.InMemoryIndex`
has it): Elasticsearch's seq_no rule (every write bumps it) guards each delete, and a scan sees the
documents as they were when it started (a point in time). `on_page` callables run after each page
is handed out (races); `delete_calls` counts the deletes of each bulk."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime
from typing import Any

from searchsync.projection import TOMBSTONED_AT
from searchsync.search.tombstones import DeleteOutcome, DeleteResult, TombstoneHit

from tests.fakes.search_state import IndexState, StoredDoc, utc_now

__all__ = ["TombstoneReads"]


class TombstoneReads(IndexState):
    def __init__(self, *, clock: Callable[[], datetime] = utc_now) -> None:
        super().__init__(clock=clock)
        self.delete_calls: list[int] = []
        self.on_page: list[Callable[[], Any]] = []

    def put(self, index: str, doc_id: str, body: dict[str, Any]) -> None:
        """Write `body` into the physical `index` (made, unmapped, when missing), unchecked."""
        if index not in self.indices:
            self.add_index(index, {}, {})
        docs = self.indices[index].docs
        version = docs[doc_id].version + 1 if doc_id in docs else 1
        docs[doc_id] = StoredDoc(version, body, self.next_seq_no())

    async def maps_tombstoned_at(self, index: str) -> bool:
        state = self.indices.get(index)
        return state is not None and TOMBSTONED_AT in state.mapped

    async def scan_tombstones(
        self, index: str, before: str, page_size: int
    ) -> AsyncIterator[list[TombstoneHit]]:
        state = self.indices.get(index)
        snapshot = [
            TombstoneHit(doc_id, d.seq_no, 1, d.body[TOMBSTONED_AT])
            for doc_id, d in sorted(state.docs.items() if state is not None else [])
            if d.body.get("is_deleted") is True
            and isinstance(d.body.get(TOMBSTONED_AT), str)
            and d.body[TOMBSTONED_AT] < before
        ]
        for start in range(0, len(snapshot), page_size):
            yield snapshot[start : start + page_size]
            for hook in self.on_page:
                hook()

    async def delete_tombstones(
        self, index: str, hits: Sequence[TombstoneHit]
    ) -> list[DeleteOutcome]:
        self.delete_calls.append(len(hits))
        out: list[DeleteOutcome] = []
        docs = self.indices[index].docs if index in self.indices else {}
        for hit in hits:
            doc = docs.get(hit.doc_id)
            if doc is None:
                out.append(DeleteOutcome(hit, DeleteResult.GONE))
            elif doc.seq_no != hit.seq_no:
                out.append(DeleteOutcome(hit, DeleteResult.CHANGED))
            else:
                del docs[hit.doc_id]
                out.append(DeleteOutcome(hit, DeleteResult.DELETED))
        return out
