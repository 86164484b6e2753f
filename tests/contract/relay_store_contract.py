"""The `RelayStore` contract: the claim (docs/relay.md), marks, take-back, counts, DEAD, revive.

Every case takes a `RelayBackend` and runs unchanged against the fake (tests/unit) and MariaDB
(tests/integration, a scratch copy of the outbox). Time moves only by `age` (the backend moves
the rows' times into the past), never by waiting.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Protocol

from searchsync.relay.port import Failure, RelayStore

HOUR = timedelta(hours=1)
NOW = timedelta(0)


class RelayBackend(Protocol):
    store: RelayStore

    async def add(self, aggregate_ids: list[str]) -> list[int]:
        """Insert one PENDING row per id, available now; their row ids, ascending."""
        ...

    async def age(self, seconds: float) -> None:
        """Move every row's ``locked_at`` and ``created_at`` `seconds` into the past."""
        ...

    async def statuses(self) -> dict[int, tuple[str, int, str | None]]:
        """Each row's (status, attempts, locked_by)."""
        ...


async def claims_pending_rows_by_id_up_to_the_limit(b: RelayBackend) -> None:
    ids = await b.add(["a", "b", "c"])
    first = await b.store.claim("r1", 2)
    assert [e.id for e in first] == ids[:2]
    assert [e.aggregate_id for e in first] == ["a", "b"] and first[0].attempts == 0
    assert (await b.statuses())[ids[0]] == ("PROCESSING", 0, "r1")
    assert [e.id for e in await b.store.claim("r2", 10)] == ids[2:]
    assert await b.store.claim("r3", 10) == []  # PROCESSING rows are never claimed again


async def failures_wait_count_attempts_and_end_dead(b: RelayBackend) -> None:
    [row] = await b.add(["a"])
    await b.store.claim("r1", 1)
    assert await b.store.mark_failed("other", [Failure(row, "x", NOW)], 2) == 0  # not its claim
    assert (await b.statuses())[row] == ("PROCESSING", 0, "r1")
    assert await b.store.mark_failed("r1", [Failure(row, "boom", HOUR)], 2) == 0
    assert (await b.statuses())[row] == ("PENDING", 1, None)
    assert await b.store.claim("r1", 1) == []  # waits out its delay
    await b.store.revive([row])  # not DEAD: nothing happens
    assert await b.store.claim("r1", 1) == []
    [again] = await b.add(["b"])
    await b.store.claim("r1", 10)
    assert await b.store.mark_failed("r1", [Failure(again, "boom", NOW)], 2) == 0
    [retry] = await b.store.claim("r1", 10)  # a zero delay is available at once
    assert (retry.id, retry.attempts) == (again, 1)
    kafka_away = Failure(again, "no acknowledgement", NOW, counts=False)
    assert await b.store.mark_failed("r1", [kafka_away], 2) == 0
    assert (await b.statuses())[again] == ("PENDING", 1, None)  # not an attempt: never DEAD
    await b.store.claim("r1", 10)
    assert await b.store.mark_failed("r1", [Failure(again, "still", NOW)], 2) == 1
    assert (await b.statuses())[again] == ("DEAD", 2, None)
    assert await b.store.claim("r1", 10) == []


async def published_rows_are_done(b: RelayBackend) -> None:
    ids = await b.add(["a", "b"])
    await b.store.claim("r1", 10)
    assert await b.store.mark_published(ids) == 2
    assert await b.store.mark_published(ids) == 0
    assert await b.store.mark_published([]) == 0
    assert {s for s, _, _ in (await b.statuses()).values()} == {"PUBLISHED"}
    assert await b.store.claim("r1", 10) == []


async def old_claims_are_taken_back(b: RelayBackend) -> None:
    ids = await b.add(["a", "b"])
    await b.store.claim("dead", 10)
    assert await b.store.take_back(60.0, 2) == 0  # young claims stay
    await b.age(120.0)
    assert await b.store.take_back(60.0, 2) == 2
    assert (await b.statuses())[ids[0]] == ("PENDING", 1, None)
    assert [e.id for e in await b.store.claim("alive", 10)] == ids
    await b.age(120.0)
    assert await b.store.take_back(60.0, 2) == 2
    assert {s for s, _, _ in (await b.statuses()).values()} == {"DEAD"}


async def counts_dead_rows_and_revive(b: RelayBackend) -> None:
    assert (await b.store.counts()).oldest_pending_age_s is None
    ids = await b.add(["a", "b", "c", "d"])
    await b.age(30.0)
    await b.store.claim("r1", 3)
    await b.store.mark_failed("r1", [Failure(ids[0], "e0", NOW), Failure(ids[1], "e1", NOW)], 1)
    counts = await b.store.counts()
    assert (counts.pending, counts.processing, counts.dead) == (1, 1, 2)
    assert counts.oldest_pending_age_s is not None and 30.0 <= counts.oldest_pending_age_s < 3600
    dead = await b.store.dead(10)
    assert [(d.id, d.attempts, d.last_error) for d in dead] == [
        (ids[0], 1, "e0"),
        (ids[1], 1, "e1"),
    ]
    assert [d.id for d in await b.store.dead(1)] == [ids[0]]
    assert await b.store.revive([ids[1], ids[2]]) == 1  # only DEAD rows
    assert (await b.statuses())[ids[1]] == ("PENDING", 0, None)
    assert await b.store.revive([]) == 0
    assert await b.store.revive(None) == 1
    assert (await b.store.counts()).dead == 0


async def status_shows_claims_retries_and_stale_claims(b: RelayBackend) -> None:
    assert not await b.store.claimed_any()
    empty = await b.store.status(60.0)
    assert not (empty.counts.processing or empty.published or empty.counts.dead)
    assert empty.oldest_due_age_s is None and empty.holders == {}
    ids = await b.add(["a", "b", "c", "d", "e"])
    assert not await b.store.claimed_any()  # PENDING rows only: Debezium's table looks so too
    assert (await b.store.status(60.0)).oldest_due_age_s is not None
    await b.store.claim("old", 2)
    await b.age(120.0)
    await b.store.claim("young", 2)
    await b.store.mark_failed("young", [Failure(ids[2], "boom", HOUR)], 5)
    await b.store.mark_published([ids[3]])
    assert await b.store.claimed_any()
    s = await b.store.status(60.0)
    assert (s.counts.pending, s.counts.processing, s.published) == (2, 2, 1)
    assert s.retrying == 1 and s.stale_claims == 2
    assert s.holders == {"old": 2}
    assert s.oldest_due_age_s is not None and s.oldest_due_age_s < 3600  # row e is due


RELAY_STORE_CASES: list[Callable[[RelayBackend], Awaitable[None]]] = [
    claims_pending_rows_by_id_up_to_the_limit,
    failures_wait_count_attempts_and_end_dead,
    published_rows_are_done,
    old_claims_are_taken_back,
    counts_dead_rows_and_revive,
    status_shows_claims_retries_and_stale_claims,
]
