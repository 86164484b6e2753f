"""The offset ledger commits the contiguous finished prefix, never the maximum finished offset."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from searchsync.stream.ledger import OffsetLedger, PartitionLedger
from searchsync.types import RawMessage

# Rising offsets with gaps (transaction markers, compaction): a start and positive steps.
offsets_strategy = st.tuples(
    st.integers(min_value=0, max_value=1_000),
    st.lists(st.integers(min_value=1, max_value=4), min_size=0, max_size=40),
).map(lambda t: [t[0] + sum(t[1][:i]) for i in range(len(t[1]) + 1)])


def _check_prefix(ledger: PartitionLedger, tracked: list[int], finished: set[int]) -> int | None:
    """The committed value: every tracked offset below it is finished, and it is minimal."""
    value = ledger.committable()
    if not tracked:
        assert value is None
        return value
    assert value is not None
    assert all(o in finished for o in tracked if o < value)
    unfinished = [o for o in tracked if o not in finished]
    assert value == (unfinished[0] if unfinished else tracked[-1] + 1)
    assert ledger.pending() == len(unfinished)
    return value


@settings(max_examples=300, deadline=None)
@given(offsets=offsets_strategy, data=st.data())
def test_committable_is_the_contiguous_finished_prefix(
    offsets: list[int], data: st.DataObject
) -> None:
    ledger = PartitionLedger()
    tracked: list[int] = []
    finished: set[int] = set()
    last_value = -1
    remaining = list(offsets)
    while remaining or len(finished) < len(tracked):
        # Any batching: consume the next batch, then finish any subset in any order.
        if remaining:
            size = data.draw(st.integers(min_value=1, max_value=len(remaining)), label="batch")
            for offset in remaining[:size]:
                ledger.track(offset)
                tracked.append(offset)
            remaining = remaining[size:]
        open_now = [o for o in tracked if o not in finished]
        order = data.draw(st.permutations(open_now), label="completion order")
        count = data.draw(st.integers(min_value=0, max_value=len(order)), label="finish count")
        if not remaining and count == 0 and order:
            count = 1  # make progress once everything is consumed
        for offset in order[:count]:
            ledger.finish(offset)
            finished.add(offset)
            value = _check_prefix(ledger, tracked, finished)
            assert value is not None
            assert value >= last_value, "the committed value never decreases"
            last_value = value
    assert ledger.committable() == offsets[-1] + 1
    assert ledger.pending() == 0


@settings(max_examples=200, deadline=None)
@given(offsets=offsets_strategy, data=st.data())
def test_finishing_twice_or_a_gap_changes_nothing(offsets: list[int], data: st.DataObject) -> None:
    ledger = PartitionLedger()
    for offset in offsets:
        ledger.track(offset)
    done = data.draw(st.sets(st.sampled_from(offsets)), label="finished")
    for offset in sorted(done):
        ledger.finish(offset)
    before = (ledger.committable(), ledger.pending())
    for offset in sorted(done):
        ledger.finish(offset)  # twice: harmless
    gaps = sorted(set(range(offsets[0], offsets[-1] + 1)) - set(offsets))
    for gap in gaps:
        ledger.finish(gap)  # a gap inside the tracked range: harmless
    assert (ledger.committable(), ledger.pending()) == before


def test_never_the_max_finished_offset() -> None:
    ledger = PartitionLedger()
    for offset in (10, 11, 12):
        ledger.track(offset)
    ledger.finish(12)
    ledger.finish(11)
    assert ledger.committable() == 10
    ledger.finish(10)
    assert ledger.committable() == 13


def test_gaps_are_skipped_once_the_prefix_is_done() -> None:
    ledger = PartitionLedger()
    for offset in (3, 7, 8):  # 4..6 are transaction markers never delivered
        ledger.track(offset)
    ledger.finish(3)
    assert ledger.committable() == 7
    ledger.finish(8)
    assert ledger.committable() == 7
    ledger.finish(7)
    assert ledger.committable() == 9


def test_nothing_tracked_means_nothing_to_commit() -> None:
    assert PartitionLedger().committable() is None
    assert PartitionLedger().pending() == 0


@pytest.mark.parametrize("offset", [5, 4])
def test_track_must_rise(offset: int) -> None:
    ledger = PartitionLedger()
    ledger.track(5)
    with pytest.raises(ValueError, match="must rise"):
        ledger.track(offset)


def test_track_rejects_negative_offsets() -> None:
    with pytest.raises(ValueError):
        PartitionLedger().track(-1)


@pytest.mark.parametrize("offset", [4, 9])
def test_finish_of_an_offset_never_tracked(offset: int) -> None:
    ledger = PartitionLedger()
    ledger.track(5)
    ledger.track(8)
    with pytest.raises(ValueError, match="never tracked"):
        ledger.finish(offset)


def test_finish_before_anything_tracked() -> None:
    with pytest.raises(ValueError, match="never tracked"):
        PartitionLedger().finish(0)


def test_memory_holds_only_unfinished_offsets() -> None:
    ledger = PartitionLedger()
    for offset in range(10_000):
        ledger.track(offset)
        if offset != 17:
            ledger.finish(offset)
    assert ledger.pending() == 1
    assert ledger.committable() == 17
    assert len(ledger._open) == 1  # the finished prefix and tail were dropped


# --- OffsetLedger -------------------------------------------------------------------------


def _pos(partition: int, offset: int, topic: str = "t") -> RawMessage:
    return RawMessage(topic, partition, offset)


def test_to_commit_reports_only_advanced_partitions() -> None:
    ledger = OffsetLedger()
    for offset in (0, 1, 2):
        ledger.track(_pos(0, offset))
    ledger.track(_pos(1, 40))
    assert ledger.to_commit() == {("t", 0): 0, ("t", 1): 40}
    ledger.mark_committed(("t", 0), 0)
    ledger.mark_committed(("t", 1), 40)
    assert ledger.to_commit() == {}
    ledger.finish(_pos(0, 1))
    assert ledger.to_commit() == {}, "offset 0 is unfinished: 1 must not be committed"
    ledger.finish(_pos(0, 0))
    assert ledger.to_commit() == {("t", 0): 2}
    ledger.mark_committed(("t", 0), 2)
    ledger.mark_committed(("t", 0), 1)  # a late callback never moves the mark back
    assert ledger.to_commit() == {}
    ledger.finish(_pos(1, 40))
    assert ledger.to_commit() == {("t", 1): 41}
    assert ledger.pending(("t", 0)) == 1
    assert ledger.pending(("t", 1)) == 0
    assert ledger.total_pending() == 1
    assert ledger.partitions() == [("t", 0), ("t", 1)]


def test_finish_after_forget_is_ignored() -> None:
    ledger = OffsetLedger()
    ledger.track(_pos(0, 5))
    ledger.forget(("t", 0))
    assert ledger.finish(_pos(0, 5)) is False
    assert ledger.partitions() == []
    assert ledger.to_commit() == {}
    assert ledger.pending(("t", 0)) == 0
    ledger.mark_committed(("t", 0), 6)  # a late commit callback: ignored too
    assert ledger.partitions() == []


def test_stale_finish_from_an_earlier_assignment_is_ignored() -> None:
    ledger = OffsetLedger()
    ledger.track(_pos(0, 500))
    ledger.forget(("t", 0))
    ledger.track(_pos(0, 300))  # reassigned, replaying from the committed offset
    assert ledger.finish(_pos(0, 500)) is False
    assert ledger.finish(_pos(0, 200)) is False
    assert ledger.committable(("t", 0)) == 300
    assert ledger.finish(_pos(0, 300)) is True
    assert ledger.to_commit() == {("t", 0): 301}


def test_offset_ledger_track_must_rise_per_partition() -> None:
    ledger = OffsetLedger()
    ledger.track(_pos(0, 5))
    ledger.track(_pos(1, 1))  # another partition has its own sequence
    with pytest.raises(ValueError):
        ledger.track(_pos(0, 5))


@settings(max_examples=200, deadline=None)
@given(
    plan=st.lists(
        st.tuples(st.integers(min_value=0, max_value=2), st.integers(min_value=1, max_value=3)),
        min_size=1,
        max_size=40,
    ),
    data=st.data(),
)
def test_offset_ledger_commits_each_partition_prefix(
    plan: list[tuple[int, int]], data: st.DataObject
) -> None:
    ledger = OffsetLedger()
    next_offset = {0: 0, 1: 0, 2: 0}
    tracked: list[RawMessage] = []
    for partition, step in plan:
        next_offset[partition] += step
        pos = _pos(partition, next_offset[partition])
        ledger.track(pos)
        tracked.append(pos)
    order = data.draw(st.permutations(tracked), label="completion order")
    finished: set[RawMessage] = set()
    committed: dict[tuple[str, int], int] = {}
    for pos in order:
        assert ledger.finish(pos) is True
        finished.add(pos)
        if data.draw(st.booleans(), label="commit now"):
            for tp, offset in ledger.to_commit().items():
                assert offset > committed.get(tp, -1)
                assert all(
                    p in finished
                    for p in tracked
                    if (p.topic, p.partition) == tp and p.offset < offset
                )
                committed[tp] = offset
                ledger.mark_committed(tp, offset)
    for tp, offset in ledger.to_commit().items():
        committed[tp] = offset
    for partition in {p.partition for p in tracked}:
        assert committed[("t", partition)] == next_offset[partition] + 1
    assert ledger.total_pending() == 0
