"""Key coalescing keeps per-key order, bounds work in flight and never loses a position."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from searchsync.stream.coalesce import Coalescer
from searchsync.stream.work import Work
from searchsync.types import Key, Operation, RawMessage, ThinEvent

KEYS = ["a", "b", "c", "d"]
PARTITION_OF = {"a": 0, "b": 1, "c": 0, "d": 1}  # Kafka partitions by key


def _event(key: str, revision: int) -> ThinEvent:
    return ThinEvent(f"{key}-{revision}", "wiki_page", key, Operation.UPSERT, revision)


class CoalescerMachine(RuleBasedStateMachine):
    """Drives the real Coalescer with any interleaving and checks it against plain bookkeeping."""

    @initialize(
        max_in_flight=st.integers(min_value=1, max_value=3),
        max_queued=st.integers(min_value=1, max_value=6),
    )
    def setup(self, max_in_flight: int, max_queued: int) -> None:
        self.max_in_flight = max_in_flight
        self.max_queued = max_queued
        self.coalescer = Coalescer(max_in_flight=max_in_flight, max_queued=max_queued)
        self.next_offset = {0: 0, 1: 0}
        self.revision = dict.fromkeys(KEYS, 0)
        self.added: list[RawMessage] = []
        self.returned: Counter[RawMessage] = Counter()
        self.dropped: set[RawMessage] = set()
        self.running: list[Work] = []
        self.last_completed_offset: dict[str, int] = {}
        self.revision_of: dict[RawMessage, int] = {}
        self.last_newest: dict[str, int] = {}
        self.key_of: dict[RawMessage, str] = {}

    @rule(key=st.sampled_from(KEYS))
    def add(self, key: str) -> None:
        partition = PARTITION_OF[key]
        self.revision[key] += 1
        pos = RawMessage("t", partition, self.next_offset[partition])
        self.next_offset[partition] += 1
        self.coalescer.add(_event(key, self.revision[key]), pos)
        self.added.append(pos)
        self.revision_of[pos] = self.revision[key]
        self.key_of[pos] = key

    @rule(limit=st.none() | st.integers(min_value=0, max_value=3))
    def take(self, limit: int | None) -> None:
        before = self.coalescer.in_flight()
        works = self.coalescer.take_ready(limit)
        if limit is not None:
            assert len(works) <= limit
        assert self.coalescer.in_flight() == before + len(works)
        running_keys = {w.key for w in self.running}
        for work in works:
            assert work.events, "a work always has events"
            assert work.key not in running_keys, "two works of one key in flight"
            running_keys.add(work.key)
            assert all(event.key == work.key for event in work.events)
            revisions = [event.source_revision for event in work.events]
            assert revisions == sorted(revisions), "events keep their arrival order"
            assert work.max_revision == max(revisions)
            assert work.newest.source_revision == max(revisions), "the newest revision wins"
            assert work.attempts >= 1
        self.running.extend(works)

    @precondition(lambda self: bool(self.running))
    @rule(data=st.data())
    def complete(self, data: st.DataObject) -> None:
        work = data.draw(st.sampled_from(self.running))
        self.running.remove(work)
        positions = self.coalescer.complete(work)
        assert positions == list(work.positions)
        self.returned.update(positions)
        # Per-key order: a key's completed works cover strictly later offsets each time.
        key = work.key.aggregate_id
        offsets = [pos.offset for pos in positions]
        assert min(offsets) > self.last_completed_offset.get(key, -1)
        self.last_completed_offset[key] = max(offsets)
        self.last_newest[key] = work.newest.source_revision
        with pytest.raises(ValueError):
            self.coalescer.complete(work)  # a work completes once

    @precondition(lambda self: bool(self.running))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        work = data.draw(st.sampled_from(self.running))
        self.running.remove(work)
        queued_before = self.coalescer.queued()
        self.coalescer.release(work)
        assert self.coalescer.queued() == queued_before + len(work.events)
        with pytest.raises(ValueError):
            self.coalescer.release(work)
        # The retry of this key carries the attempts on: it is the first ready work of its key.
        retry = self.coalescer.take_ready()
        self.running.extend(retry)
        mine = [w for w in retry if w.key == work.key]
        if mine:
            assert mine[0].attempts == work.attempts + 1
            assert mine[0].positions[: len(work.positions)] == work.positions, (
                "release keeps positions"
            )
            assert mine[0].events[: len(work.events)] == work.events

    @rule(partition=st.sampled_from([0, 1]))
    def drop(self, partition: int) -> None:
        queued_before = self.coalescer.queued()
        in_running = {pos for w in self.running for pos in w.positions}
        pending = [
            p
            for p in self.added
            if p.partition == partition
            and p not in self.dropped
            and p not in in_running
            and self.returned[p] == 0
        ]
        dropped = self.coalescer.drop_partition("t", partition)
        assert dropped == len(pending)
        assert self.coalescer.queued() == queued_before - dropped
        self.dropped.update(pending)

    @invariant()
    def bounded_in_flight(self) -> None:
        if not hasattr(self, "coalescer"):
            return
        assert self.coalescer.in_flight() == len(self.running) <= self.max_in_flight
        assert len({w.key for w in self.running}) == len(self.running)

    @invariant()
    def no_position_lost_or_duplicated(self) -> None:
        if not hasattr(self, "coalescer"):
            return
        in_running = Counter(pos for w in self.running for pos in w.positions)
        assert all(n == 1 for n in self.returned.values()), "a position returned twice"
        assert all(n == 1 for n in in_running.values())
        queued = [
            p
            for p in self.added
            if self.returned[p] == 0 and p not in self.dropped and p not in in_running
        ]
        assert self.coalescer.queued() == len(queued)
        assert self.coalescer.is_full() == (len(queued) >= self.max_queued)

    def teardown(self) -> None:
        if not hasattr(self, "coalescer"):
            return
        # Drain: every added position comes back exactly once, or was dropped.
        for _ in range(len(self.added) + len(self.running) + 1):
            for work in self.running:
                self.returned.update(self.coalescer.complete(work))
                self.last_newest[work.key.aggregate_id] = work.newest.source_revision
            self.running = self.coalescer.take_ready()
            if not self.running:
                break
        assert self.coalescer.queued() == 0
        assert self.coalescer.in_flight() == 0
        for pos in self.added:
            assert (self.returned[pos], pos in self.dropped) in {(1, False), (0, True)}
        # The newest revision wins: a key's last completed work carries its highest revision.
        for key, newest in self.last_newest.items():
            mine = [self.revision_of[p] for p in self.returned if self.key_of[p] == key]
            assert newest == max(mine)


TestCoalescerMachine = CoalescerMachine.TestCase
TestCoalescerMachine.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)


# --- examples that pin the behaviour down ------------------------------------------------


def _pos(offset: int, partition: int = 0) -> RawMessage:
    return RawMessage("t", partition, offset)


def test_queued_events_merge_and_newest_wins() -> None:
    c = Coalescer(max_in_flight=4, max_queued=100)
    c.add(_event("a", 1), _pos(0))
    c.add(_event("b", 1), _pos(1))
    c.add(_event("a", 2), _pos(2))
    works = c.take_ready()
    assert [w.key for w in works] == [Key("wiki_page", "a"), Key("wiki_page", "b")]
    a = works[0]
    assert a.positions == (_pos(0), _pos(2))
    assert a.newest == _event("a", 2)
    assert a.max_revision == 2
    assert a.attempts == 1


def test_events_arriving_while_in_flight_wait_for_the_next_work() -> None:
    c = Coalescer(max_in_flight=4, max_queued=100)
    c.add(_event("a", 1), _pos(0))
    (first,) = c.take_ready()
    c.add(_event("a", 2), _pos(1))
    c.add(_event("a", 3), _pos(2))
    assert c.take_ready() == [], "one work per key in flight"
    assert c.queued() == 2
    assert c.complete(first) == [_pos(0)]
    (second,) = c.take_ready()
    assert second.positions == (_pos(1), _pos(2))
    assert second.newest.source_revision == 3


def test_in_flight_bound_and_fifo_over_keys() -> None:
    c = Coalescer(max_in_flight=2, max_queued=100)
    for i, key in enumerate("abcd"):
        c.add(_event(key, 1), _pos(i))
    assert c.ready() == 4
    first = c.take_ready()
    assert [w.key.aggregate_id for w in first] == ["a", "b"]
    assert c.ready() == 2
    assert c.take_ready() == []
    c.complete(first[1])
    assert [w.key.aggregate_id for w in c.take_ready(limit=5)] == ["c"]
    assert c.in_flight() == 2


def test_take_ready_limit() -> None:
    c = Coalescer(max_in_flight=5, max_queued=100)
    for i, key in enumerate("abc"):
        c.add(_event(key, 1), _pos(i))
    assert len(c.take_ready(limit=1)) == 1
    assert c.take_ready(limit=0) == []
    assert len(c.take_ready()) == 2


def test_release_merges_with_waiting_events_and_counts_attempts() -> None:
    c = Coalescer(max_in_flight=1, max_queued=100)
    c.add(_event("a", 1), _pos(0))
    (work,) = c.take_ready()
    c.add(_event("a", 2), _pos(1))
    c.release(work)
    assert c.in_flight() == 0
    assert c.queued() == 2
    (retry,) = c.take_ready()
    assert retry.positions == (_pos(0), _pos(1))
    assert retry.attempts == 2
    assert c.complete(retry) == [_pos(0), _pos(1)]


def test_drop_partition_forgets_queued_but_not_running() -> None:
    c = Coalescer(max_in_flight=1, max_queued=100)
    c.add(_event("a", 1), _pos(0, partition=0))
    (work,) = c.take_ready()
    c.add(_event("a", 2), _pos(1, partition=0))
    c.add(_event("b", 1), _pos(0, partition=1))
    assert c.drop_partition("t", 0) == 1
    assert c.queued() == 1
    assert c.complete(work) == [_pos(0, partition=0)], "a running work finishes normally"
    (b,) = c.take_ready()
    assert b.key.aggregate_id == "b"
    assert c.complete(b) == [_pos(0, partition=1)]
    assert c.take_ready() == []


def test_is_full_is_the_backpressure_signal() -> None:
    c = Coalescer(max_in_flight=1, max_queued=2)
    c.add(_event("a", 1), _pos(0))
    assert not c.is_full()
    c.add(_event("b", 1), _pos(1))
    assert c.is_full()
    c.take_ready()
    assert not c.is_full()


def test_foreign_work_is_rejected() -> None:
    c = Coalescer(max_in_flight=1, max_queued=2)
    c.add(_event("a", 1), _pos(0))
    (work,) = c.take_ready()
    forged = Work(work.key, work.events, work.positions, work.attempts)
    with pytest.raises(ValueError):
        c.complete(forged)
    with pytest.raises(ValueError):
        c.release(forged)


@pytest.mark.parametrize(("max_in_flight", "max_queued"), [(0, 1), (1, 0)])
def test_bounds_must_be_positive(max_in_flight: int, max_queued: int) -> None:
    with pytest.raises(ValueError):
        Coalescer(max_in_flight=max_in_flight, max_queued=max_queued)
