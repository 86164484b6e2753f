"""In-memory stand-ins for the pipeline's ports, and small helpers to build its inputs.

- `FakeIntake` stands in for `searchsync.kafka.intake.KafkaIntake` over scripted messages per
  partition: `consume` hands out the next messages of partitions that are not paused, `commit`
  records the offsets (and can be told to refuse them), `pause`/`resume` are recorded. `assign`,
  `revoke` and `lose` drive a `RebalanceListener` (the pipeline) inside the next `consume`, as
  librdkafka runs its rebalance callbacks inside ``consume()``; a revoke commits the offsets
  `revoking` returns.
- `FakeDlq` stands in for `searchsync.dlq.record.DlqProducer`: `send` acknowledges at once, or
  holds until released (to model an unacknowledged produce), or raises `TransientError` a number
  of times.
- `PageTruth` is `FakeTruth` for wiki_page rows and floors that can run a hook (or wait on
  a gate, or raise) before each row read.
- `RaisingProjector` is a projector `build` with a bug for some ids.
- `wait_until` waits on a condition with a deadline: no sleep-and-hope.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from searchsync.dlq.record import DlqRecord
from searchsync.errors import ErrorCode, TransientError
from searchsync.events import encode_json
from searchsync.kafka.intake import RebalanceListener
from searchsync.projection import Projector, Row, wiki_page
from searchsync.types import Operation, RawMessage, ThinEvent, TopicPartition

from tests.fakes.truth import FakeTruth

TOPIC = "outbox.event.wiki_page"


async def wait_until(condition: Callable[[], bool], what: str, *, timeout_s: float = 5.0) -> None:
    """Return as soon as `condition()` holds; fail the test with `what` at the deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        if loop.time() >= deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for: {what}")
        await asyncio.sleep(0.005)


def event_value(
    aggregate_id: str,
    revision: int,
    *,
    operation: Operation = Operation.UPSERT,
    aggregate_type: str = "wiki_page",
    event_id: str | None = None,
) -> bytes:
    """The JSON value of a thin event, as Debezium would publish it."""
    return encode_json(
        ThinEvent(
            event_id or f"{aggregate_id}-{revision}",
            aggregate_type,
            aggregate_id,
            operation,
            revision,
        )
    )


def raw(
    offset: int,
    value: bytes | None,
    *,
    partition: int = 0,
    topic: str = TOPIC,
    key: bytes | None = b"k",
) -> RawMessage:
    return RawMessage(topic, partition, offset, key, value, timestamp_ms=None)


def page_row(aggregate_id: str, revision: int, **overrides: Any) -> dict[str, Any]:
    """A wiki_page row as the DictCursor returns it."""
    row: dict[str, Any] = {
        "id": aggregate_id,
        "title": f"title {aggregate_id} r{revision}",
        "content": f"content of {aggregate_id} at revision {revision}",
        "relations_json": (
            '{"RELATED_CHARACTER": [{"entity_id": "c1", "entity_type": "character"}]}'
        ),
        "revision": revision,
        "deleted_at": None,
    }
    row.update(overrides)
    return row


class FakeIntake:
    """The Kafka intake over scripted messages; records commits, pauses and resumes."""

    def __init__(
        self, *, per_consume: int | None = None, listener: RebalanceListener | None = None
    ) -> None:
        self._queues: dict[TopicPartition, deque[RawMessage]] = {}
        self.listener = listener
        self.revoked: set[TopicPartition] = (
            set()
        )  # not handed out any more (another member reads them)
        self._rebalances: list[
            tuple[str, list[TopicPartition], asyncio.Future[dict[TopicPartition, int]]]
        ] = []
        self._fed = asyncio.Event()
        self.per_consume = per_consume
        self.paused: set[TopicPartition] = set()
        self.pause_calls: list[list[TopicPartition]] = []
        self.resume_calls: list[list[TopicPartition]] = []
        self.commits: list[
            dict[TopicPartition, int]
        ] = []  # every commit asked for, accepted or not
        self.committed: dict[TopicPartition, int] = {}  # the accepted ones
        self.fail_commits = False
        self.consume_calls = 0

    def feed(self, messages: Iterable[RawMessage]) -> None:
        for m in messages:
            self._queues.setdefault((m.topic, m.partition), deque()).append(m)
        self._fed.set()

    def backlog(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def max_committed(self, tp: TopicPartition) -> int | None:
        """The highest offset ever asked to be committed for `tp` (None: never)."""
        offsets = [c[tp] for c in self.commits if tp in c]
        return max(offsets) if offsets else None

    async def assign(self, partitions: Sequence[TopicPartition]) -> None:
        """Assign `partitions` in the next consume (`RebalanceListener.assigned`)."""
        await self._rebalance("assign", partitions)

    async def revoke(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Revoke in the next consume: drain (`revoking`), commit what it returns, `revoked`.

        Returns the offsets the revoke committed.
        """
        return await self._rebalance("revoke", partitions)

    async def lose(self, partitions: Sequence[TopicPartition]) -> None:
        """Lose `partitions` in the next consume: `revoked(lost=True)`, nothing committed."""
        await self._rebalance("lose", partitions)

    async def _rebalance(
        self, kind: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        if self.listener is None:
            raise AssertionError("FakeIntake has no listener: set .listener first")
        done: asyncio.Future[dict[TopicPartition, int]] = asyncio.get_running_loop().create_future()
        self._rebalances.append((kind, list(partitions), done))
        self._fed.set()  # wake a consume that waits for input
        return await done

    async def _run_rebalances(self) -> None:
        while self._rebalances:
            kind, tps, done = self._rebalances.pop(0)
            assert self.listener is not None
            committed: dict[TopicPartition, int] = {}
            if kind == "assign":
                self.revoked.difference_update(tps)
                self.listener.assigned(tps)
            elif kind == "revoke":
                offsets = await self.listener.revoking(tps)
                if offsets:
                    results = await self.commit(offsets)
                    committed = {tp: o for tp, o in offsets.items() if results.get(tp)}
                self.listener.revoked(tps, lost=False)
                self.revoked.update(tps)
            else:
                self.listener.revoked(tps, lost=True)
                self.revoked.update(tps)
            done.set_result(committed)

    async def consume(self, max_messages: int, timeout_s: float) -> list[RawMessage]:
        self.consume_calls += 1
        await self._run_rebalances()
        limit = max_messages if self.per_consume is None else min(max_messages, self.per_consume)
        out: list[RawMessage] = []
        for tp, queue in self._queues.items():
            if tp in self.paused or tp in self.revoked:
                continue
            while queue and len(out) < limit:
                out.append(queue.popleft())
        if not out:  # like a poll that times out: wait for more input, at most timeout_s
            self._fed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._fed.wait(), timeout_s)
        else:
            await asyncio.sleep(0)  # a real consume always yields to the loop
        return out

    async def commit(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, bool]:
        self.commits.append(dict(offsets))
        if self.fail_commits:
            return dict.fromkeys(offsets, False)
        self.committed.update(offsets)
        return dict.fromkeys(offsets, True)

    async def pause(self, partitions: Sequence[TopicPartition]) -> None:
        self.pause_calls.append(list(partitions))
        self.paused.update(partitions)

    async def resume(self, partitions: Sequence[TopicPartition]) -> None:
        self.resume_calls.append(list(partitions))
        self.paused.difference_update(partitions)

    async def high_watermarks(
        self, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        return {tp: 0 for tp in partitions}


class FakeDlq:
    """A DLQ producer that acknowledges, holds until released, or fails transiently."""

    def __init__(self) -> None:
        self.records: list[DlqRecord] = []  # acknowledged dead letters, in order
        self.keys: list[bytes | None] = []
        self.waiting: list[DlqRecord] = []  # sends held and not yet released
        self.failures_left = 0
        self.send_calls = 0
        self._hold: Callable[[DlqRecord], bool] | None = None
        self._released = asyncio.Event()

    def hold(self, when: Callable[[DlqRecord], bool] = lambda _r: True) -> None:
        """Hold every later send whose record matches `when` until `release()`."""
        self._hold = when
        self._released.clear()

    def release(self) -> None:
        self._hold = None
        self._released.set()

    def fail(self, times: int) -> None:
        """The next `times` sends raise `TransientError` (the broker did not acknowledge)."""
        self.failures_left = times

    async def send(self, record: DlqRecord, key: bytes | None) -> None:
        self.send_calls += 1
        if self.failures_left > 0:
            self.failures_left -= 1
            raise TransientError(
                ErrorCode.DLQ_DELIVERY_FAILED, "no acknowledgement from the broker"
            )
        if self._hold is not None and self._hold(record):
            self.waiting.append(record)
            try:
                await self._released.wait()
            finally:
                self.waiting.remove(record)
        self.records.append(record)
        self.keys.append(key)


class PageTruth(FakeTruth):
    """`FakeTruth` of wiki_page rows and floors, with hooks before each row read.

    `put`/`remove`/`floors` work on wiki_page; `before_load` runs (and may change rows) before
    each row read, `gate`, when set, holds reads until set, and `fail_with` makes reads raise.
    """

    def __init__(self) -> None:
        super().__init__()
        self.loads = 0
        self.before_load: Callable[[int], None] | None = None
        self.gate: asyncio.Event | None = None
        self.gate_waiters = 0
        self.fail_with: Exception | None = None

    def put_page(self, row: dict[str, Any], *, primary_only: bool = False) -> None:
        self.put(row, table="wiki_page", primary_only=primary_only)

    def put_page_floor(self, aggregate_id: str, revision: int) -> None:
        self.put_floor("wiki_page", aggregate_id, revision)

    async def rows_by_id(
        self, projector: Projector, ids: Sequence[str], *, primary: bool = False
    ) -> dict[str, Row]:
        if self.fail_with is not None:
            raise self.fail_with
        self.loads += 1
        if self.before_load is not None:
            self.before_load(self.loads)
        if self.gate is not None:
            self.gate_waiters += 1
            try:
                await self.gate.wait()
            finally:
                self.gate_waiters -= 1
        return await super().rows_by_id(projector, ids, primary=primary)


class RaisingProjector:
    """A `build` that raises `AttributeError` for the ids in `bad` and builds the rest."""

    def __init__(self, bad: set[str]) -> None:
        self.bad = bad
        self.calls = 0

    def __call__(self, row: Row) -> dict[str, Any]:
        self.calls += 1
        if row["id"] in self.bad:
            return None.title  # type: ignore[attr-defined, no-any-return]  # the bug under test
        return wiki_page.build(row)
