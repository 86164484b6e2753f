"""An in-memory `searchsync.relay.port.RelayStore` with the MySQL store's semantics, on a
settable clock (seconds), and a `Publisher` that records or refuses sends."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from confluent_kafka import KafkaError
from searchsync.errors import DeliveryFailed
from searchsync.relay.port import (
    DEAD,
    PENDING,
    PROCESSING,
    PUBLISHED,
    DeadRow,
    Failure,
    OutboxCounts,
    OutboxEntry,
    RelayStatus,
)

EPOCH = datetime(2026, 1, 1)


@dataclass
class FakeRow:
    id: int
    aggregate_id: str
    revision: int
    created_at: float
    status: str = PENDING
    available_at: float = 0.0
    attempts: int = 0
    locked_by: str | None = None
    locked_at: float | None = None
    last_error: str | None = None

    def entry(self) -> OutboxEntry:
        payload = {
            "event_id": f"e{self.id}",
            "aggregate_type": "wiki_page",
            "aggregate_id": self.aggregate_id,
            "operation": "UPSERT",
            "source_revision": self.revision,
        }
        return OutboxEntry(
            self.id, f"e{self.id}", "wiki_page", self.aggregate_id, "UPSERT", self.revision,
            json.dumps(payload), self.attempts,
        )  # fmt: skip


@dataclass
class FakeRelayStore:
    now: float = 0.0
    rows: dict[int, FakeRow] = field(default_factory=dict)
    claims: list[tuple[str, list[int]]] = field(default_factory=list)

    def add(self, aggregate_id: str, revision: int = 1) -> int:
        row_id = len(self.rows) + 1
        self.rows[row_id] = FakeRow(row_id, aggregate_id, revision, self.now, available_at=self.now)
        return row_id

    async def claim(self, holder: str, limit: int) -> list[OutboxEntry]:
        due = [
            r for r in sorted(self.rows.values(), key=lambda r: r.id)
            if r.status == PENDING and r.available_at <= self.now
        ][:limit]  # fmt: skip
        for r in due:
            r.status, r.locked_by, r.locked_at = PROCESSING, holder, self.now
        self.claims.append((holder, [r.id for r in due]))
        return [r.entry() for r in due]

    async def mark_published(self, ids: Sequence[int]) -> int:
        changed = [self.rows[i] for i in ids if self.rows[i].status != PUBLISHED]
        for r in changed:
            r.status, r.locked_by, r.locked_at, r.last_error = PUBLISHED, None, None, None
        return len(changed)

    async def mark_failed(self, holder: str, failures: Sequence[Failure], max_attempts: int) -> int:
        dead = 0
        for f in failures:
            r = self.rows[f.id]
            if r.status != PROCESSING or r.locked_by != holder:
                continue
            r.attempts += int(f.counts)
            r.status = DEAD if f.counts and r.attempts >= max_attempts else PENDING
            r.last_error, r.available_at = f.error, self.now + f.delay.total_seconds()
            r.locked_by = r.locked_at = None
            dead += r.status == DEAD
        return dead

    async def take_back(self, timeout_s: float, max_attempts: int) -> int:
        expired = [
            r for r in self.rows.values()
            if r.status == PROCESSING and r.locked_at is not None
            and r.locked_at < self.now - timeout_s
        ]  # fmt: skip
        for r in expired:
            r.attempts += 1
            r.status = DEAD if r.attempts >= max_attempts else PENDING
            r.last_error = f"claim by {r.locked_by} timed out"
            r.available_at, r.locked_by, r.locked_at = self.now, None, None
        return len(expired)

    async def counts(self) -> OutboxCounts:
        pending = [r for r in self.rows.values() if r.status == PENDING]
        by = [r.status for r in self.rows.values()]
        oldest = min((r.created_at for r in pending), default=None)
        return OutboxCounts(
            pending=len(pending),
            processing=by.count(PROCESSING),
            dead=by.count(DEAD),
            oldest_pending_age_s=None if oldest is None else self.now - oldest,
        )

    async def claimed_any(self) -> bool:
        return any(r.status != PENDING for r in self.rows.values())

    async def status(self, claim_timeout_s: float) -> RelayStatus:
        pending = [r for r in self.rows.values() if r.status == PENDING]
        due = [r.available_at for r in pending if r.available_at <= self.now]
        claims = [r for r in self.rows.values() if r.status == PROCESSING]
        holders: dict[str, int] = {}
        for r in claims:
            holders[str(r.locked_by)] = holders.get(str(r.locked_by), 0) + 1
        return RelayStatus(
            counts=await self.counts(),
            published=sum(r.status == PUBLISHED for r in self.rows.values()),
            retrying=len(pending) - len(due),
            oldest_due_age_s=self.now - min(due) if due else None,
            stale_claims=sum(
                r.locked_at is not None and r.locked_at < self.now - claim_timeout_s for r in claims
            ),
            holders=holders,
        )

    async def dead(self, limit: int) -> list[DeadRow]:
        rows = sorted((r for r in self.rows.values() if r.status == DEAD), key=lambda r: r.id)
        return [
            DeadRow(r.id, f"e{r.id}", "wiki_page", r.aggregate_id, "UPSERT", r.revision,
                    r.attempts, r.last_error, EPOCH + timedelta(seconds=self.now))
            for r in rows[:limit]
        ]  # fmt: skip

    async def revive(self, ids: Sequence[int] | None) -> int:
        chosen = [
            r for r in self.rows.values() if r.status == DEAD and (ids is None or r.id in ids)
        ]
        for r in chosen:
            r.status, r.attempts, r.available_at = PENDING, 0, self.now
        return len(chosen)


@dataclass
class FakePublisher:
    """Records every send. Kafka refuses the records of aggregate ids in `refuse` as records
    (MSG_SIZE_TOO_LARGE); while `away`, every send fails with a transport error."""

    sent: list[tuple[str, bytes, bytes | None, list[tuple[str, bytes]]]] = field(
        default_factory=list
    )
    refuse: set[str] = field(default_factory=set)
    away: bool = False

    async def send(
        self, topic: str, value: bytes, key: bytes | None, *, headers: list[tuple[str, bytes]]
    ) -> None:
        if self.away:
            raise DeliveryFailed(KafkaError(KafkaError._TRANSPORT, "all brokers down"))
        if key is not None and key.decode() in self.refuse:
            refused = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, f"broker refused {key.decode()}")
            raise DeliveryFailed(refused)
        self.sent.append((topic, value, key, headers))
