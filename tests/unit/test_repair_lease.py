"""One repair per aggregate type at a time: the lease (`ops/repair/lease.py`) over an in-memory
store on a clock the test moves; `repair --once` exits 5 while another repair holds it."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from runtime_fakes import Fakes, tables_of
from searchsync.cli import main
from searchsync.errors import LeaseHeld, LeaseLost
from searchsync.exit_codes import ExitCode
from searchsync.ops.repair.lease import RepairLease

from tests.fakes.repair_lease import FakeLeaseStore


class Clock:
    """A monotonic clock and a sleep that moves it (and the store's time) at once."""

    def __init__(self, store: FakeLeaseStore) -> None:
        self.t = 0.0
        self.store = store

    def __call__(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += seconds
        self.store.now += timedelta(seconds=seconds)
        await asyncio.sleep(0)


def _lease(store: FakeLeaseStore, clock: Clock, holder: str) -> RepairLease:
    return RepairLease(store, 30.0, holder=holder, clock=clock, sleep=clock.sleep)


async def test_a_second_repair_is_refused_naming_the_holder_and_takes_a_lease_run_out() -> None:
    store = FakeLeaseStore()
    clock = Clock(store)
    first, second = _lease(store, clock, "a@h pid 1"), _lease(store, clock, "b@h pid 2")
    await first.acquire(["wiki_page", "article"], wait=False)
    with pytest.raises(LeaseHeld) as refused:
        await second.acquire(["article", "wiki_page"], wait=False)
    assert "held by a@h pid 1" in str(refused.value) and "repair.lease_s" in str(refused.value)
    assert {h.aggregate_type for h in refused.value.held} == {"article", "wiki_page"}
    assert {holder for holder, _ in store.leases.values()} == {"a@h pid 1"}  # nothing taken

    await clock.sleep(31)  # the first died without releasing: its lease runs out
    await second.acquire(["wiki_page"], wait=False)
    assert store.leases["wiki_page"][0] == "b@h pid 2"


async def test_a_waiting_daemon_says_why_once_and_takes_over_when_released() -> None:
    store = FakeLeaseStore()
    clock = Clock(store)
    first, second = _lease(store, clock, "a"), _lease(store, clock, "b")
    said: list[str] = []
    async with first.hold(["wiki_page"], wait=False):
        waiting = asyncio.create_task(second.acquire(["wiki_page"], wait=True, on_wait=said.append))
        for _ in range(20):  # the holder renews: the standby keeps waiting
            await clock.sleep(5)
        assert not waiting.done() and store.leases["wiki_page"][0] == "a"
    await asyncio.wait_for(waiting, 5)
    assert store.leases["wiki_page"][0] == "b"
    [line] = said
    assert "held by a" in line and "waiting" in line


async def test_a_holder_that_cannot_renew_in_time_stops_its_work() -> None:
    store = FakeLeaseStore()
    clock = Clock(store)
    lease = _lease(store, clock, "a")
    with pytest.raises(LeaseLost, match="could not renew"):
        async with lease.hold(["wiki_page"], wait=False):
            store.fail_with = ConnectionError("mysql down")
            for _ in range(100):
                await clock.sleep(5)
    assert clock.t < 60  # stopped once the lease ran out, not at the end of the work


async def test_a_holder_whose_lease_another_took_stops_its_work() -> None:
    store = FakeLeaseStore()
    clock = Clock(store)
    lease = _lease(store, clock, "a")
    with pytest.raises(LeaseLost, match="held by b"):
        async with lease.hold(["wiki_page"], wait=False):
            store.leases["wiki_page"] = ("b", store.now + timedelta(hours=1))
            for _ in range(100):
                await clock.sleep(5)


def test_repair_once_exits_5_while_another_repair_holds_the_lease(
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = FakeLeaseStore()
    store.leases["wiki_page"] = ("ops@other pid 7", store.now + timedelta(days=3650))
    fakes = Fakes(tables=tables_of(repair_lease=store))
    assert main(["repair", "--once", "--type", "wiki_page"], runtime=fakes) == ExitCode.BUSY
    err = capsys.readouterr().err
    assert err.startswith("repair not started: the repair of wiki_page is held by ops@other pid 7")
