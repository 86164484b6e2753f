"""The `FanoutStore` contract: each case takes a `FanoutWorld` and runs unchanged against
`FakeFanout` (tests/unit/test_mysql_contracts.py) and `MysqlFanout` on MariaDB
(tests/integration/test_mysql_contracts_real.py).

The real ``search_fanout`` table is shared: every case uses a referenced type of its own
(`FanoutWorld.kind`), so it claims only its own jobs, and ids that start with the world's prefix.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from searchsync.mysql.fanout import FanoutJob, FanoutStore, FanoutTarget
from searchsync.projection import Child

from tests.fakes.fanout import FakeFanout

TYPE = "article"  # the dependent type: its table holds a column `author_id`
TABLE, VIA = "article", "author_id"
REF = "ref_id"  # the column of the world's child table (`FanoutWorld.child`) naming a reference


def ref_child(table: str) -> Child:
    """A child table of articles whose rows reference something (``ref_id``)."""
    columns = ("article_id", REF, "position")
    return Child("refs", table, key="article_id", columns=columns, order_by=("position",))


class FanoutWorld(Protocol):
    store: FanoutStore
    prefix: str
    kind: str
    """The referenced type the case's jobs have (nobody else's)."""
    child: Child
    """A child table of ``article`` (`ref_child`), nobody else's."""

    async def put(self, dependent_id: str, author_id: str | None, revision: int) -> None:
        """A dependent row (``article``) pointing at `author_id`."""
        ...

    async def put_link(self, dependent_id: str, ref_id: str, position: int) -> None:
        """A row of the child table: `dependent_id` references `ref_id` (at `position`)."""
        ...

    async def rebuilds(self, ids: list[str]) -> list[tuple[str, str, int]]:
        """The REBUILD events appended for `ids` as (type, id, revision), in append order."""
        ...


class FakeFanoutWorld:
    def __init__(self) -> None:
        self.store = FakeFanout()
        self.prefix = "c-"
        self.kind = "author"
        self.child = ref_child("article_ref")

    async def put(self, dependent_id: str, author_id: str | None, revision: int) -> None:
        rows = self.store.tables.setdefault(TABLE, {})
        rows[dependent_id] = {"id": dependent_id, VIA: author_id, "revision": revision}

    async def put_link(self, dependent_id: str, ref_id: str, position: int) -> None:
        row = {"article_id": dependent_id, REF: ref_id, "position": position}
        self.store.child_tables.setdefault(self.child.table, []).append(row)

    async def rebuilds(self, ids: list[str]) -> list[tuple[str, str, int]]:
        return [e for e in self.store.events if e[1] in ids]


def target(w: FanoutWorld, author: str, revision: int, lookup: str = "author") -> FanoutTarget:
    return FanoutTarget(w.kind, f"{w.prefix}{author}", TYPE, lookup, revision)


def routes(w: FanoutWorld) -> list[tuple[str, str, str]]:
    return [(w.kind, TYPE, "author")]


async def own_job(w: FanoutWorld, owner: str, author: str) -> FanoutJob:
    """The job of `author`, claimed under `owner` (a case has one pending job at a time)."""
    job = await w.store.claim(owner, 30.0, routes(w))
    assert job is not None, f"no pending job of {author} to claim"
    assert job.target.referenced_id == f"{w.prefix}{author}"
    return job


async def a_recorded_job_is_claimed_once_at_its_start(w: FanoutWorld) -> None:
    await w.store.record([target(w, "a1", 3)])
    job = await own_job(w, f"{w.prefix}me", "a1")
    assert (job.cursor_id, job.appended, job.target.revision) == ("", 0, 3)
    again = await own_job(w, f"{w.prefix}me", "a1")  # its own lease: the same job
    assert again.id == job.id
    assert await w.store.claim(f"{w.prefix}other", 30.0, routes(w)) is None  # leased
    # another deployment's projectors: neither its lookup nor its type are served here
    assert await w.store.claim(f"{w.prefix}me", 30.0, [(w.kind, TYPE, "editor")]) is None
    assert await w.store.claim(f"{w.prefix}me", 30.0, [("not_served", TYPE, "author")]) is None


async def dependents_are_paged_from_the_truth_by_id(w: FanoutWorld) -> None:
    author = f"{w.prefix}a2"
    for n in range(5):
        await w.put(f"{w.prefix}d{n}", author, n + 1)
    await w.put(f"{w.prefix}other", f"{w.prefix}zz", 1)
    first = await w.store.dependents(TABLE, VIA, author, "", 3)
    rest = await w.store.dependents(TABLE, VIA, author, first[-1].id, 3)
    assert [d.id for d in first + rest] == [f"{w.prefix}d{n}" for n in range(5)]
    assert [d.revision for d in first + rest] == [1, 2, 3, 4, 5]


async def advance_appends_and_moves_the_cursor_together(w: FanoutWorld) -> None:
    author = f"{w.prefix}a3"
    ids = [f"{w.prefix}e{n}" for n in range(4)]
    for i in ids:
        await w.put(i, author, 7)
    await w.store.record([target(w, "a3", 2)])
    owner = f"{w.prefix}me"
    job = await own_job(w, owner, "a3")
    page = await w.store.dependents(TABLE, VIA, author, job.cursor_id, 2)
    moved = await w.store.advance(job, owner, 30.0, page)
    assert moved is not None and (moved.cursor_id, moved.appended) == (ids[1], 2)
    assert await w.rebuilds(ids) == [(TYPE, ids[0], 7), (TYPE, ids[1], 7)]
    # the same page again from the old job: it changed meanwhile, nothing is appended
    assert await w.store.advance(job, owner, 30.0, page) is None
    assert len(await w.rebuilds(ids)) == 2
    # another owner cannot move it while the lease holds
    assert await w.store.advance(moved, f"{w.prefix}thief", 30.0, page) is None
    rest = await w.store.dependents(TABLE, VIA, author, moved.cursor_id, 10)
    done = await w.store.advance(moved, owner, 30.0, rest)
    assert done is not None and await w.store.finish(done, owner)
    assert [e[1] for e in await w.rebuilds(ids)] == ids


async def a_newer_revision_restarts_the_pass_an_older_one_does_not(w: FanoutWorld) -> None:
    author = f"{w.prefix}a4"
    await w.put(f"{w.prefix}f1", author, 1)
    await w.store.record([target(w, "a4", 5)])
    owner = f"{w.prefix}me"
    job = await own_job(w, owner, "a4")
    page = await w.store.dependents(TABLE, VIA, author, "", 10)
    moved = await w.store.advance(job, owner, 30.0, page)
    assert moved is not None and await w.store.finish(moved, owner)
    await w.store.record([target(w, "a4", 5), target(w, "a4", 4)])  # redelivered, older
    assert await w.store.claim(owner, 30.0, routes(w)) is None  # done: nothing to claim
    await w.store.record([target(w, "a4", 6)])  # a second rename
    assert (await w.store.stats([w.kind])).pending == 1
    restarted = await own_job(w, owner, "a4")
    assert (restarted.cursor_id, restarted.appended, restarted.target.revision) == ("", 0, 6)


async def a_newer_revision_mid_pass_stops_the_old_pass(w: FanoutWorld) -> None:
    author = f"{w.prefix}a5"
    await w.put(f"{w.prefix}g1", author, 1)
    await w.put(f"{w.prefix}g2", author, 1)
    await w.store.record([target(w, "a5", 1)])
    owner = f"{w.prefix}me"
    job = await own_job(w, owner, "a5")
    first = await w.store.dependents(TABLE, VIA, author, "", 1)
    moved = await w.store.advance(job, owner, 30.0, first)
    assert moved is not None
    await w.store.record([target(w, "a5", 2)])
    second = await w.store.dependents(TABLE, VIA, author, moved.cursor_id, 1)
    assert await w.store.advance(moved, owner, 30.0, second) is None
    assert not await w.store.finish(moved, owner)
    again = await own_job(w, owner, "a5")
    assert (again.cursor_id, again.target.revision) == ("", 2)


async def an_expired_lease_is_taken_over_from_its_cursor(w: FanoutWorld) -> None:
    author = f"{w.prefix}a6"
    await w.put(f"{w.prefix}h1", author, 1)
    await w.put(f"{w.prefix}h2", author, 1)
    await w.store.record([target(w, "a6", 1)])
    dead, alive = f"{w.prefix}dead", f"{w.prefix}alive"
    job = await own_job(w, dead, "a6")
    first = await w.store.dependents(TABLE, VIA, author, "", 1)
    moved = await w.store.advance(job, dead, -1.0, first)  # a lease already run out
    assert moved is not None
    taken = await own_job(w, alive, "a6")
    assert (taken.id, taken.cursor_id) == (job.id, f"{w.prefix}h1")
    assert await w.store.advance(moved, dead, 30.0, first) is None


async def dependents_through_a_child_are_paged_once_each_by_id(w: FanoutWorld) -> None:
    """The roots of the child rows referencing X, each once however many rows it has, in id
    order; none whose root is gone, none that only references another."""
    x, y = f"{w.prefix}x", f"{w.prefix}y"
    ids = [f"{w.prefix}k{n}" for n in range(5)]
    for n, i in enumerate(ids):
        await w.put(i, None, n + 1)
    links = [(0, x), (0, x), (1, x), (2, y), (3, y), (3, x), (4, x)]
    for position, (n, ref) in enumerate(links):
        await w.put_link(ids[n], ref, position)
    await w.put_link(f"{w.prefix}gone", x, 0)  # a child row whose root does not exist
    pages, after = [], ""
    while page := await w.store.dependents(TABLE, REF, x, after, 2, through=w.child):
        pages.append([(d.id, d.revision) for d in page])
        after = page[-1].id
    assert pages == [[(ids[0], 1), (ids[1], 2)], [(ids[3], 4), (ids[4], 5)]]
    assert await w.store.dependents(TABLE, REF, f"{w.prefix}none", "", 5, through=w.child) == []


async def a_job_through_a_child_appends_each_dependent_once(w: FanoutWorld) -> None:
    x = f"{w.prefix}x7"
    ids = [f"{w.prefix}m{n}" for n in range(3)]
    for i in ids:
        await w.put(i, None, 4)
        for position in range(3):
            await w.put_link(i, x, position)
    await w.store.record([target(w, "x7", 1, lookup="ref")])
    owner, served = f"{w.prefix}me", [(w.kind, TYPE, "ref")]
    job = await w.store.claim(owner, 30.0, served)
    assert job is not None and job.target.lookup_name == "ref"
    while page := await w.store.dependents(TABLE, REF, x, job.cursor_id, 2, through=w.child):
        moved = await w.store.advance(job, owner, 30.0, page)
        assert moved is not None
        job = moved
    assert await w.store.finish(job, owner) and job.appended == 3
    assert await w.rebuilds(ids) == [(TYPE, i, 4) for i in ids]


FANOUT_CASES: tuple[Callable[[Any], Awaitable[None]], ...] = (
    a_recorded_job_is_claimed_once_at_its_start,
    dependents_are_paged_from_the_truth_by_id,
    advance_appends_and_moves_the_cursor_together,
    a_newer_revision_restarts_the_pass_an_older_one_does_not,
    a_newer_revision_mid_pass_stops_the_old_pass,
    an_expired_lease_is_taken_over_from_its_cursor,
    dependents_through_a_child_are_paged_once_each_by_id,
    a_job_through_a_child_appends_each_dependent_once,
)
