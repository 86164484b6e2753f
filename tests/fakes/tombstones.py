"""The `TombstoneStore` fake: documents per physical index, with Elasticsearch's seq_no rule (every
write bumps it) guarding each delete, and a scan that sees the documents as they were when it
started (a point in time)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from searchsync.search.tombstones import DeleteOutcome, DeleteResult, TombstoneHit

__all__ = ["FakeTombstones"]


@dataclass
class _Doc:
    body: dict[str, Any]
    seq_no: int


class FakeTombstones:
    """Physical indices' documents with Elasticsearch's seq_no rule: every write bumps it."""

    def __init__(self, *, unmapped: set[str] | None = None) -> None:
        self.docs: dict[str, dict[str, _Doc]] = {}
        self.unmapped = unmapped or set()  # indices whose mapping lacks tombstoned_at
        self._seq = 0
        self.delete_calls: list[int] = []
        self.on_page: list[Any] = []  # callables run after each page is handed out (races)

    def put(self, index: str, doc_id: str, body: dict[str, Any]) -> None:
        self._seq += 1
        self.docs.setdefault(index, {})[doc_id] = _Doc(body, self._seq)

    async def maps_tombstoned_at(self, index: str) -> bool:
        return index not in self.unmapped

    async def scan(
        self, index: str, before: str, page_size: int
    ) -> AsyncIterator[list[TombstoneHit]]:
        snapshot = [
            TombstoneHit(doc_id, d.seq_no, 1, d.body["tombstoned_at"])
            for doc_id, d in sorted(self.docs.get(index, {}).items())
            if d.body.get("is_deleted") is True
            and isinstance(d.body.get("tombstoned_at"), str)
            and d.body["tombstoned_at"] < before
        ]
        for start in range(0, len(snapshot), page_size):
            yield snapshot[start : start + page_size]
            for hook in self.on_page:
                hook()

    async def delete(self, index: str, hits: Sequence[TombstoneHit]) -> list[DeleteOutcome]:
        self.delete_calls.append(len(hits))
        out: list[DeleteOutcome] = []
        docs = self.docs.get(index, {})
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
