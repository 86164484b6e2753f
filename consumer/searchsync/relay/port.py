"""What the relay needs from the outbox table, as a narrow port (`RelayStore`) and its rows.

The MySQL implementation is `searchsync.relay.mysql_store.MysqlRelayStore`; tests use a fake
(tests/fakes/relay_store.py). Statuses: PENDING (waiting, or waiting again after a failure),
PROCESSING (claimed by ``locked_by`` at ``locked_at``), PUBLISHED (acknowledged by Kafka) and
DEAD (past the attempt limit; ``searchsync relay revive`` puts it back).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any, Final, Protocol

__all__ = [
    "DEAD",
    "PENDING",
    "PROCESSING",
    "PUBLISHED",
    "DeadRow",
    "Failure",
    "OutboxCounts",
    "OutboxEntry",
    "RelayStatus",
    "RelayStore",
]

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
    """A failed publish of row `id`: it waits `delay` before it may be claimed again.

    `counts` says the failure was the row's own (a payload the router cannot expand, a record
    Kafka refuses as a record): it is an attempt, and enough of them make the row DEAD. A failure
    of Kafka itself (no acknowledgement in time, a broker away) leaves its attempts as they were."""

    id: int
    error: str
    delay: timedelta
    counts: bool = True


@dataclass(frozen=True, slots=True)
class OutboxCounts:
    """The gauges' source: rows per status, and the age of the oldest PENDING row (seconds,
    by the database's clock; None when nothing is pending)."""

    pending: int
    processing: int
    dead: int
    oldest_pending_age_s: float | None


@dataclass(frozen=True, slots=True)
class RelayStatus:
    """What `searchsync status` shows of the relay: the gauges' `counts`, rows `published`,
    rows PENDING that wait out a retry delay (`retrying`), how long the oldest PENDING row that
    is due (available now) has been due (None when none is), claims older than the claim
    timeout (`stale_claims`: their holder died or stalls; the next tick of any relay takes them
    back), and the rows each holder (``locked_by``) has claimed."""

    counts: OutboxCounts
    published: int
    retrying: int
    oldest_due_age_s: float | None
    stale_claims: int
    holders: dict[str, int]

    @property
    def in_use(self) -> bool:
        """Some row was claimed by a relay (PROCESSING, PUBLISHED or DEAD)."""
        return bool(self.counts.processing or self.published or self.counts.dead)


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


class RelayStore(Protocol):
    """The outbox table as the relay sees it. Every call is its own short transaction."""

    async def claim(self, holder: str, limit: int) -> list[OutboxEntry]:
        """Seed 000's claim query (PENDING, available, by id, ``FOR UPDATE SKIP LOCKED``), then
        mark those rows PROCESSING by `holder`, in one transaction."""
        ...

    async def mark_published(self, ids: Sequence[int]) -> int:
        """Mark rows PUBLISHED (Kafka acknowledged them); the number changed."""
        ...

    async def mark_failed(self, holder: str, failures: Sequence[Failure], max_attempts: int) -> int:
        """Give back each row `holder` still holds, PENDING again after its delay; a failure that
        `counts` is an attempt, and the row is DEAD once it reaches `max_attempts`. The number
        that became DEAD."""
        ...

    async def take_back(self, timeout_s: float, max_attempts: int) -> int:
        """Claims older than `timeout_s` (their holder died) count as a failed attempt and are
        PENDING (available now) or DEAD again; the number taken back."""
        ...

    async def counts(self) -> OutboxCounts: ...

    async def claimed_any(self) -> bool:
        """Whether any row was ever claimed by a relay (PROCESSING, PUBLISHED or DEAD): a cheap
        look, on a table Debezium publishes too."""
        ...

    async def status(self, claim_timeout_s: float) -> RelayStatus:
        """The counts and claims `searchsync status` shows; a claim older than
        `claim_timeout_s` is stale."""
        ...

    async def dead(self, limit: int) -> list[DeadRow]:
        """DEAD rows by id, at most `limit`."""
        ...

    async def revive(self, ids: Sequence[int] | None) -> int:
        """Put DEAD rows back (all of them when `ids` is None): PENDING, available now, attempts
        0; the number revived."""
        ...
