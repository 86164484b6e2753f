"""An in-memory stand-in for the prune's Kafka Connect port (the outbox fake is
tests/fakes/outbox.py)."""

from __future__ import annotations

from dataclasses import dataclass

from searchsync.kafka.connect import ConnectorStatus, TaskStatus


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
