"""In-memory stand-ins for the purge's and the prune's ports, with the rules that matter kept:
seq_no guards on deletes, keyset pages by id, deletes bounded by id range and age."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from searchsync.kafka.connect import ConnectorStatus, TaskStatus
from searchsync.mysql.outbox import OutboxRow
from searchsync.search.tombstones import DeleteOutcome, DeleteResult, TombstoneHit


@dataclass
class _Doc:
    body: dict[str, Any]
    seq_no: int


class FakeTombstones:
    """One physical index's documents with Elasticsearch's seq_no rule: every write bumps it."""

    def __init__(self, *, maps_field: bool = True) -> None:
        self.docs: dict[str, dict[str, _Doc]] = {}
        self.maps_field = maps_field
        self._seq = 0
        self.delete_calls: list[int] = []
        self.on_page: list[Any] = []  # callables run after each page is handed out (races)

    def put(self, index: str, doc_id: str, body: dict[str, Any]) -> None:
        self._seq += 1
        self.docs.setdefault(index, {})[doc_id] = _Doc(body, self._seq)

    async def maps_tombstoned_at(self, index: str) -> bool:
        return self.maps_field

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


@dataclass
class FakeOutbox:
    rows: dict[int, datetime] = field(default_factory=dict)
    pages: list[tuple[int, int]] = field(default_factory=list)
    deletes: list[tuple[int, int]] = field(default_factory=list)
    status: dict[int, str] = field(default_factory=dict)  # the relay's; PENDING when absent

    async def page(self, after_id: int, limit: int) -> list[OutboxRow]:
        self.pages.append((after_id, limit))
        ids = sorted(i for i in self.rows if i > after_id)[:limit]
        return [OutboxRow(i, self.rows[i], self.status.get(i, "PENDING")) for i in ids]

    async def delete_range(
        self, first_id: int, last_id: int, created_before: datetime, *, published_only: bool = False
    ) -> int:
        self.deletes.append((first_id, last_id))
        doomed = [
            i
            for i, at in self.rows.items()
            if first_id <= i <= last_id
            and at < created_before
            and (not published_only or self.status.get(i) == "PUBLISHED")
        ]
        for i in doomed:
            del self.rows[i]
        return len(doomed)


@dataclass
class FakeConnect:
    state: str = "RUNNING"
    task_states: tuple[str, ...] = ("RUNNING",)
    calls: int = 0

    async def status(self, name: str | None = None) -> ConnectorStatus:
        self.calls += 1
        tasks = tuple(
            TaskStatus(i, s, trace="boom" if s == "FAILED" else None)
            for i, s in enumerate(self.task_states)
        )
        return ConnectorStatus(name or "searchsync-outbox", self.state, "w1", tasks)
