"""The fan-out worker resumes after a crash at any point (Hypothesis, over the in-memory store),
through a column of the dependents' table or through a child table: no dependent is lost,
duplicates are allowed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st
from searchsync.config import FanoutSettings
from searchsync.examples import article
from searchsync.mysql.fanout import Dependent, FanoutJob, FanoutTarget, Route
from searchsync.ops.fanout_worker import FanoutWorker
from searchsync.projection import Child, ProjectorRegistry

from tests import catalog
from tests.fakes.fanout import FakeFanout


def registry() -> ProjectorRegistry:
    r = ProjectorRegistry()
    r.register(article.projector())
    r.register(catalog.projector())
    return r


def dependents_of(store: FakeFanout, author: str, ids: list[str], *, child: bool) -> None:
    """Articles of `author`, or (`child`) products listing category `author`, twice each."""
    if not child:
        rows = store.tables.setdefault("article", {})
        for i in ids:
            rows[i] = {"id": i, "author_id": author, "revision": 3}
        return
    products = store.tables.setdefault("xc_product", {})
    links = store.child_tables.setdefault("xc_product_category", [])
    for i in ids:
        products[i] = {"id": i, "revision": 3}
        links.extend({"product_id": i, "category_id": author, "position": n} for n in (0, 1))


class Crash(Exception):
    pass


class CrashingStore(FakeFanout):
    """Counts every call of the worker's; at the calls in `crash` it raises `Crash`, before the
    call took effect (False) or after (True); at the calls in `renames` the author is renamed
    first (a newer revision recorded, as the consumer would)."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        super().__init__(clock=clock)
        self.calls = 0
        self.crash: dict[int, bool] = {}
        self.renames: set[int] = set()
        self.revision = 1
        self.child = False  # the route through the child table
        self.marks = [0]  # len(events) at each rename

    async def _before(self) -> None:
        self.calls += 1
        if self.calls in self.renames:
            self.revision += 1
            self.marks.append(len(self.events))
            await self.record([target(self.revision, child=self.child)])
        if self.crash.get(self.calls) is False:
            raise Crash

    def _after(self) -> None:
        if self.crash.get(self.calls) is True:
            raise Crash

    async def claim(
        self, owner: str, lease_s: float, routes: Collection[Route]
    ) -> FanoutJob | None:
        await self._before()
        job = await super().claim(owner, lease_s, routes)
        self._after()
        return job

    async def dependents(
        self,
        table: str,
        via: str,
        referenced_id: str,
        after: str,
        limit: int,
        *,
        through: Child | None = None,
        keys: tuple[str, str] = ("id", "revision"),
    ) -> list[Dependent]:
        await self._before()
        found = await super().dependents(
            table, via, referenced_id, after, limit, through=through, keys=keys
        )
        self._after()
        return found

    async def advance(
        self, job: FanoutJob, owner: str, lease_s: float, page: Sequence[Dependent]
    ) -> FanoutJob | None:
        await self._before()
        moved = await super().advance(job, owner, lease_s, page)
        self._after()
        return moved

    async def finish(self, job: FanoutJob, owner: str) -> bool:
        await self._before()
        done = await super().finish(job, owner)
        self._after()
        return done


def target(revision: int, *, child: bool) -> FanoutTarget:
    if child:
        return FanoutTarget("xc_category", "au1", "xc_product", "category", revision)
    return FanoutTarget("author", "au1", "article", "author", revision)


@settings(max_examples=200, deadline=None)
@given(
    count=st.integers(0, 40),
    page=st.integers(1, 9),
    crash=st.dictionaries(st.integers(1, 40), st.booleans(), max_size=5),
    renames=st.sets(st.integers(1, 40), max_size=2),
    child=st.booleans(),
)
def test_a_crash_at_any_point_loses_no_dependent(
    count: int, page: int, crash: dict[int, bool], renames: set[int], child: bool
) -> None:
    """Workers crash at any store call (before or after it took effect) and a new one takes over
    once the lease runs out; renames come between any two calls. In the end the job is done and
    every dependent has a REBUILD appended after the last rename was recorded."""
    asyncio.run(_crash_and_resume(count, page, crash, renames, child))


async def _crash_and_resume(
    count: int, page: int, crash: dict[int, bool], renames: set[int], child: bool
) -> None:
    wall = [datetime(2026, 1, 1, tzinfo=UTC)]
    store = CrashingStore(lambda: wall[0])
    store.crash, store.renames, store.child = crash, renames, child
    ids = [f"ar{n:03}" for n in range(count)]
    dependents_of(store, "au1", ids, child=child)
    dependents_of(store, "au2", ["not-mine"], child=child)
    await store.record([target(1, child=child)])
    s = FanoutSettings(appends_per_s=1_000_000.0, page_size=page, lease_s=60.0)
    for n in range(len(crash) + 1):
        worker = FanoutWorker(store, registry(), s, owner=f"w{n}")
        try:
            while await worker.run_once(asyncio.Event()):
                pass
            break
        except Crash:
            wall[0] += timedelta(seconds=61)  # the crashed worker's lease runs out
    store.crash = {}  # crashes not reached yet: a last worker sees the end
    while await FanoutWorker(store, registry(), s, owner="last").run_once(asyncio.Event()):
        pass
    assert {e[1] for e in store.events[store.marks[-1] :]} >= set(ids)
    assert {e[1] for e in store.events} <= set(ids)
    assert (await store.stats([target(1, child=child).referenced_type])).pending == 0
