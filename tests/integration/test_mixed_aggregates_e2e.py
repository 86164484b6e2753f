"""Several aggregate types and fan-out on the real stack: rows of ``wiki_page``, ``article``,
``article_tag`` and ``author`` change under concurrent writes, with renames of authors with
hundreds of articles, while a consumer group (each member with its fan-out worker) keeps the
indices: two members, a third joins and the second leaves during the writes, so partitions and
fan-out jobs change hands under load.

For ~15 s, at once: wiki pages are created, updated, soft- and hard-deleted and re-created;
articles get new tags, are re-pointed between authors, soft- and hard-deleted, created; two
authors with 220 articles each are renamed three times each (one rename while articles of that
author are being created and re-pointed to it, two of the other's in a row). Watchers read every
document all the while: no version (and, at one version, no author name) ever moves backwards.
Then every document equals the projection of its rows read from MySQL (0 divergent), the deleted
ones are tombstones, and every fan-out job of the run is done at its author's last revision.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiomysql
import pytest
import pytest_asyncio
from searchsync.projection import registry_from_settings
from searchsync.search.client import make_es_client

from tests.integration.conftest_mysql import fetch_all
from tests.integration.consumer_harness import (
    InProcessConsumer,
    divergent,
    type_indices,
    wait_for,
)
from tests.integration.doc_watch import watch_docs
from tests.integration.mixed_writes import MixedWrites
from tests.integration.test_aggregate_types_e2e import (
    ensure_topics,
    expected,
    require_article_table,
    wait_converged,
)
from tests.integration.test_fanout_e2e import fanout_env, watching

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

TOPICS = ("outbox.event.wiki_page", "outbox.event.article", "outbox.event.author")
TYPES = ("article", "wiki_page")
WRITE_S = 15.0
PER_AUTHOR = 220


@dataclass
class Group:
    """The consumer group of the test: members join and leave while the writes go on."""

    env: dict[str, str]
    members: list[InProcessConsumer] = field(default_factory=list)

    async def join(self) -> InProcessConsumer:
        member = InProcessConsumer(self.env)
        await member.start(join=bool(self.members))
        self.members.append(member)
        return member

    def metric(self, name: str, **labels: str) -> float:
        return sum(m.metric(name, **labels) for m in self.members)


@pytest_asyncio.fixture(loop_scope="session")
async def group(app_pool: aiomysql.Pool) -> AsyncIterator[Group]:
    """Two members of one group (own group, alias prefix and DLQ), each with its fan-out worker."""
    await require_article_table(app_pool)
    ensure_topics(TOPICS)
    env = fanout_env(
        "mix", TOPICS, SEARCHSYNC_FANOUT_APPENDS_PER_S="300", SEARCHSYNC_FANOUT_PAGE_SIZE="50"
    )
    g = Group(env)
    async with type_indices(InProcessConsumer(env).settings, TYPES):
        try:
            await g.join()
            await g.join()
            yield g
        finally:
            codes = [await m.close() for m in g.members]
    assert codes == [0] * len(codes)


@dataclass(frozen=True)
class Cast:
    """The ids of one run (all under ``mix-<u>-``) and the names each author goes through."""

    prefix: str
    authors: tuple[str, str, str]  # two with PER_AUTHOR articles, one with 10
    names: dict[str, list[str]]
    arts: dict[str, list[str]]  # each author's articles at the start
    newcomers: list[str]  # created for the first author during her second rename
    movers: list[str]  # the second's, re-pointed to the first during that rename
    doomed: list[str]  # the second's, deleted during his fan-out, ahead of its cursor
    spare: list[str]  # created (and more) by the random task
    pages: list[str]

    @classmethod
    def new(cls) -> Cast:
        p = f"mix-{uuid.uuid4().hex[:8]}-"
        ann, bob, cid = (f"{p}{n}" for n in ("ann", "bob", "cid"))
        sizes = {ann: PER_AUTHOR, bob: PER_AUTHOR, cid: 10}
        arts = {a: [f"{a}-{i:04d}" for i in range(n)] for a, n in sizes.items()}
        return cls(
            prefix=p,
            authors=(ann, bob, cid),
            names={a: [f"{a[-3:]} {k}" for k in ("one", "二", "three", "four")] for a in sizes},
            arts=arts,
            newcomers=[f"{p}new-{i:03d}" for i in range(30)],
            movers=arts[bob][:20],
            doomed=arts[bob][-15:],
            spare=[f"{p}spare-{i:03d}" for i in range(40)],
            pages=[f"{p}page-{i:03d}" for i in range(60)],
        )

    @property
    def all_articles(self) -> list[str]:
        return [*(i for a in self.authors for i in self.arts[a]), *self.newcomers, *self.spare]

    @property
    def random_articles(self) -> list[str]:
        """The articles the random task changes (the others have a task of their own)."""
        reserved = {*self.movers, *self.doomed}
        return [i for a in self.authors for i in self.arts[a] if i not in reserved] + self.spare


async def scripted(w: MixedWrites, group: Group, cast: Cast) -> None:
    """The renames (three of each big author, one of the small), the deletes during a fan-out,
    and the group's membership changing under load, on a schedule."""
    (ann, bob, cid), names = cast.authors, cast.names
    await asyncio.sleep(1.5)
    await w.author(ann, names[ann][1])
    await asyncio.sleep(1.5)
    await group.join()  # a third member: the partitions move
    await w.author(bob, names[bob][1])
    await asyncio.sleep(0.3)  # two in a row: bob's first pass is under way
    await w.author(bob, names[bob][2])
    for i, article_id in enumerate(cast.doomed):
        await w.delete_article(article_id, hard=i % 3 > 0)
    await asyncio.sleep(1.0)

    async def meanwhile() -> None:  # ann's articles created and re-pointed to her
        for new, mover in zip(cast.newcomers, [*cast.movers, *[None] * 10], strict=True):
            await w.create_article(new, ann)
            if mover is not None:
                await w.repoint(mover, ann)

    # ann renamed while her articles are created and re-pointed; a member leaves meanwhile
    await asyncio.gather(w.author(ann, names[ann][2]), meanwhile(), group.members[1].close())
    await w.author(cid, names[cid][1])
    await asyncio.sleep(3.0)
    await w.author(ann, names[ann][3])
    await w.author(bob, names[bob][3])


async def test_mixed_aggregates_under_concurrent_writes_end_as_their_rows(
    group: Group,
    app_pool: aiomysql.Pool,
    consumer_pool: aiomysql.Pool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cast = Cast.new()
    seed = int(os.environ.get("MIXED_SEED", time.time_ns() % 1_000_000))
    w = MixedWrites(app_pool, seed)
    (ann, bob, _), names = cast.authors, cast.names
    t0 = time.monotonic()
    for a in cast.authors:
        await w.author(a, names[a][0])
    firsts = [(i, a) for a in cast.authors for i in cast.arts[a]]
    await asyncio.gather(*(_create_all(w, firsts[k::4]) for k in range(4)))  # 4 streams
    setup_s = time.monotonic() - t0

    started = time.monotonic()
    first, authors = group.members[0], [*cast.authors, None]

    async def article_step(article_id: str) -> None:
        await w.article_step(article_id, authors)

    all_names = [n for a in cast.authors for n in names[a]]
    async with (
        watching(first, cast.all_articles, all_names) as articles_watch,
        watch_docs(first, "wiki_page", cast.pages, lambda _: -1) as pages_watch,
    ):
        await asyncio.gather(
            scripted(w, group, cast),
            # three streams of article changes and two of page changes, each on ids of its own
            *(
                w.for_a_while(WRITE_S, 0.01, article_step, cast.random_articles[k::3])
                for k in range(3)
            ),
            *(w.for_a_while(WRITE_S, 0.02, w.page_step, cast.pages[k::2]) for k in range(2)),
        )
        wrote_s = time.monotonic() - started
        registry = registry_from_settings(first.settings.projection)
        touched = {kind: [i for i in ids if i in w.state] for kind, ids in
                   (("article", cast.all_articles), ("wiki_page", cast.pages))}  # fmt: skip
        want = {
            kind: await expected(registry, consumer_pool, kind, ids)
            for kind, ids in touched.items()
        }
        await wait_converged(first, consumer_pool, want)
        converged_s = time.monotonic() - started
    es = make_es_client(first.settings)
    try:
        diverging = {
            kind: await divergent(es, first.settings.alias(kind), docs)
            for kind, docs in want.items()
        }
    finally:
        await es.close()
    assert diverging == {"article": [], "wiki_page": []}
    await wait_for(lambda: _fanouts_done(consumer_pool, list(cast.authors)), 60, "fan-outs done")

    done = w.done
    print(f"seed {seed}; setup {setup_s:.1f}s; wrote {wrote_s:.1f}s,"
          f" converged at {converged_s:.1f}s, fan-outs done at {time.monotonic() - started:.1f}s;"
          f" {dict(done)}; watcher reads {articles_watch.reads}+{pages_watch.reads}")  # fmt: skip
    assert done["author rename"] == 7
    assert all(done[k] > 0 for k in ("article tags", "article re-point", "article hard delete",
                                     "article soft delete", "page create", "page update",
                                     "page soft delete", "page hard delete")), done  # fmt: skip
    assert [d for d in want["wiki_page"].values() if d.is_deleted]
    assert all(want["article"][i].is_deleted for i in cast.doomed)
    # the last renames reached the hundreds of articles their authors still have (the random
    # re-points leave each of the two more than 100 however many there are)
    last_name = [want["article"][i].body.get("author_name") for i in touched["article"]]
    print(
        f"{last_name.count(names[ann][3])} + {last_name.count(names[bob][3])} show the last names"
    )
    assert last_name.count(names[ann][3]) + last_name.count(names[bob][3]) >= 200
    assert group.metric("searchsync_fanout_rebuilds_total") >= 4 * PER_AUTHOR
    assert all(m.metric("searchsync_event_outcomes_total", result="applied") > 0
               for m in group.members), "a member applied nothing"  # fmt: skip
    # none of the run's events dead-lettered (a revision regression would be); the topics are
    # shared, so another test's poison rows may be dead-lettered here: not counted
    ours = [
        r for r in caplog.records if str(getattr(r, "aggregate_id", "")).startswith(cast.prefix)
    ]
    assert [r.__dict__ for r in ours if getattr(r, "result", "") == "dead_lettered"] == []


async def _create_all(w: MixedWrites, todo: list[tuple[str, str]]) -> None:
    for article_id, author_id in todo:
        await w.create_article(article_id, author_id)


async def _fanouts_done(pool: aiomysql.Pool, authors: list[str]) -> bool:
    """Every fan-out job of `authors` finished its pass at the author's last revision."""
    rows = await fetch_all(
        pool,
        "SELECT f.status, f.revision AS job, a.revision AS row FROM search_fanout f"
        " JOIN author a ON a.id = f.referenced_id WHERE f.referenced_type = 'author'"
        f" AND f.dependent_type = 'article' AND a.id IN ({', '.join(['%s'] * len(authors))})",
        tuple(authors),
    )
    return len(rows) == len(authors) and all(
        r["status"] == "done" and r["job"] == r["row"] for r in rows
    )
