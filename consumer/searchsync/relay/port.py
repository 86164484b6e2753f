"""What the relay needs from the outbox table (`RelayStore`), its rows, and the Kafka record
Debezium's Outbox Event Router makes of a row (`router_record`). Statuses: PENDING (waiting, maybe
after a failure), PROCESSING (claimed by ``locked_by`` at ``locked_at``), PUBLISHED (acknowledged
by Kafka), DEAD (past the attempt limit, until ``relay revive``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any, Final, Protocol

PENDING: Final = "PENDING"
PROCESSING: Final = "PROCESSING"
PUBLISHED: Final = "PUBLISHED"
DEAD: Final = "DEAD"


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    """One claimed row: what the Outbox Event Router reads, and the attempts so far."""

    id: int
    event_id: str
    aggregate_type: str
    aggregate_id: str
    operation: str
    source_revision: int
    payload: str
    attempts: int


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed publish of row `id`, claimable again after `delay`. `counts`: the row's own fault
    (an attempt; enough make it DEAD), not Kafka's (attempts unchanged)."""

    id: int
    error: str
    delay: timedelta
    counts: bool = True


@dataclass(frozen=True, slots=True)
class OutboxCounts:
    """Rows per status, and the age of the oldest PENDING row (seconds, the database's clock;
    None when nothing is pending)."""

    pending: int
    processing: int
    dead: int
    oldest_pending_age_s: float | None


@dataclass(frozen=True, slots=True)
class RelayStatus:
    """What `searchsync status` shows of the relay: `retrying` rows wait out a retry delay,
    `oldest_due_age_s` is how long the oldest due PENDING row has waited, `stale_claims` are
    older than the claim timeout, `holders` counts claims per ``locked_by``."""

    counts: OutboxCounts
    published: int
    retrying: int
    oldest_due_age_s: float | None
    stale_claims: int
    holders: dict[str, int]


@dataclass(frozen=True, slots=True)
class DeadRow:
    id: int
    event_id: str
    aggregate_type: str
    aggregate_id: str
    operation: str
    source_revision: int
    attempts: int
    last_error: str | None
    updated_at: datetime  # naive UTC

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "updated_at": self.updated_at.isoformat() + "Z"}


ROUTER_HEADERS: Final = (
    "id",
    "searchsync-operation",
    "searchsync-revision",
    "searchsync-aggregate-type",
)

PARTITIONER: Final = {"partitioner": "murmur2_random"}
"""librdkafka's Java-compatible partitioner: a key lands where Debezium's record lands."""


@dataclass(frozen=True, slots=True)
class RouterRecord:
    topic: str
    key: bytes
    value: bytes
    headers: list[tuple[str, bytes]]


def router_record(entry: OutboxEntry, topic_template: str = "outbox.event.{type}") -> RouterRecord:
    """What the router makes of `entry` (as configured by `searchsync.kafka.outbox_connector`;
    compared record for record by tests/integration/test_relay_router_equivalence.py): topic from
    `topic_template`, key the aggregate id (UTF-8), value the payload as compact JSON (keys in
    order, non-ASCII unescaped), `ROUTER_HEADERS` (Debezium's own ``__debezium.context.*`` headers
    describe the connector, not the event, and are not forged). ValueError when the payload is not
    a JSON object."""
    payload = json.loads(entry.payload)
    if not isinstance(payload, dict):
        raise ValueError(f"outbox row {entry.id}: payload is not a JSON object")
    value = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    fields = (entry.event_id, entry.operation, str(entry.source_revision), entry.aggregate_type)
    return RouterRecord(
        topic=topic_template.replace("{type}", entry.aggregate_type),
        key=entry.aggregate_id.encode("utf-8"),
        value=value.encode("utf-8"),
        headers=[(name, v.encode("utf-8")) for name, v in zip(ROUTER_HEADERS, fields, strict=True)],
    )


class RelayStore(Protocol):
    """The outbox table as the relay sees it. Every call is its own short transaction."""

    async def claim(self, holder: str, limit: int) -> list[OutboxEntry]:
        """The claim query of docs/relay.md (PENDING, available, by id, ``FOR UPDATE SKIP
        LOCKED``) and those rows marked PROCESSING by `holder`, in one transaction."""

    async def mark_published(self, ids: Sequence[int]) -> int:
        """Mark rows PUBLISHED (Kafka acknowledged them); the number changed."""

    async def mark_failed(self, holder: str, failures: Sequence[Failure], max_attempts: int) -> int:
        """Give back each row `holder` still holds, PENDING after its delay, or DEAD when a
        counting failure reaches `max_attempts`; the number that became DEAD."""

    async def take_back(self, timeout_s: float, max_attempts: int) -> int:
        """Claims older than `timeout_s` count as a failed attempt: PENDING (available now) or
        DEAD again; the number taken back."""

    async def counts(self) -> OutboxCounts: ...

    async def claimed_any(self) -> bool:
        """Whether a relay ever claimed a row (PROCESSING, PUBLISHED or DEAD): a cheap look."""

    async def status(self, claim_timeout_s: float) -> RelayStatus:
        """A claim older than `claim_timeout_s` is stale."""

    async def dead(self, limit: int) -> list[DeadRow]:
        """DEAD rows by id, at most `limit`."""

    async def revive(self, ids: Sequence[int] | None) -> int:
        """DEAD rows (all when `ids` is None) PENDING again, available now, attempts 0; how many."""
