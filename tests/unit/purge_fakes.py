"""In-memory stand-ins for the prune's ports (the outbox, Kafka Connect), with the rules that matter
kept: keyset pages by id, deletes bounded by id range and age."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from searchsync.kafka.connect import ConnectorStatus, TaskStatus
from searchsync.mysql.outbox import OutboxRow


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
