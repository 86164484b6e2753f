"""The projection-state buffer: written late, coalesced per key, the same table as writing every
update when it happened (and after a failed flush, too)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st
from searchsync.mysql.projection_state import StateUpdate
from searchsync.mysql.state_buffer import StateBuffer

from tests.fakes.projection_state import FakeProjectionState

T0 = datetime(2026, 1, 1)

_update = st.builds(
    lambda key, src, kind, rev, h, code: (
        StateUpdate(
            "wiki_page", key, src, indexed_revision=rev, schema_version=1, projection_hash=f"h{h}"
        )
        if kind == "ok"
        else StateUpdate("wiki_page", key, src, error_code=code, error_message=f"m{code}")
        if kind == "err"
        else StateUpdate("wiki_page", key, src)
    ),
    st.sampled_from(["a", "b", "c"]),
    st.integers(0, 6),
    st.sampled_from(["ok", "err", "seen"]),
    st.integers(0, 6),
    st.integers(0, 3),
    st.sampled_from(["E1", "E2"]),
)
# batches of updates; after each, flush (True), fail a flush, or keep buffering (False)
_steps = st.lists(
    st.tuples(st.lists(_update, max_size=4), st.sampled_from(["flush", "fail", "keep"])),
    max_size=12,
)


class _Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


class _Flaky(FakeProjectionState):
    def __init__(self, clock: _Clock) -> None:
        super().__init__(clock=clock)
        self.fail = False
        self.entered = asyncio.Event()

    async def record(self, outcomes: Sequence[StateUpdate]) -> None:
        if self.fail:
            self.entered.set()
            await asyncio.sleep(0)  # fails while the next batch arrives
            self.fail = False
            raise OSError("MySQL went away")
        await super().record(outcomes)


async def _both(steps: list[tuple[list[StateUpdate], str]]) -> tuple[object, object]:
    clock = _Clock()
    direct = FakeProjectionState(clock=clock)
    flaky = _Flaky(clock)
    buffer = StateBuffer(flaky, interval_s=3600, clock=lambda: 0.0, wall_clock=clock)
    failing: asyncio.Task[None] | None = None
    for updates, then in steps:
        clock.now += timedelta(seconds=1)
        await direct.record(updates)
        buffer.add(updates)
        if failing is not None:  # the failed flush ends after this batch was added
            await failing
            failing, flaky.fail = None, False
        clock.now += timedelta(seconds=1)
        if then == "flush":
            await buffer.flush()
        elif then == "fail" and len(buffer):
            flaky.fail = True
            flaky.entered.clear()
            failing = asyncio.create_task(buffer.flush())
            await flaky.entered.wait()  # the flush has taken the entries and is failing
    if failing is not None:
        await failing
    flaky.fail = False
    clock.now += timedelta(seconds=1)
    await buffer.flush()  # the quiet period
    assert len(buffer) == 0
    return direct.states, flaky.states


@settings(max_examples=300, deadline=None)
@given(_steps)
def test_the_buffered_table_equals_the_direct_one_after_a_quiet_period(
    steps: list[tuple[list[StateUpdate], str]],
) -> None:
    direct, buffered = asyncio.run(_both(steps))
    assert buffered == direct


async def test_nothing_is_written_before_the_interval_then_one_coalesced_flush() -> None:
    now = [0.0]
    writer = FakeProjectionState()
    buffer = StateBuffer(writer, interval_s=1.0, clock=lambda: now[0])
    for rev in range(1, 6):  # a hot key: five successes
        buffer.add(
            [
                StateUpdate(
                    "wiki_page",
                    "hot",
                    rev,
                    indexed_revision=rev,
                    schema_version=1,
                    projection_hash=f"h{rev}",
                )
            ]
        )
        buffer.flush_if_due()
    assert writer.calls == []
    now[0] = 1.0
    buffer.flush_if_due()
    await asyncio.gather(*buffer.tasks())
    [call] = writer.calls
    assert len(call) == 1  # one row for five updates
    state = writer.states[("wiki_page", "hot")]
    assert (state.indexed_revision, state.projection_hash) == (5, "h5")
