"""The fan-out of an author's change to the articles that show it, on the real stack: the author
event goes through the connector to ``outbox.event.author``, the consumer records the job, its
worker finds the articles in MySQL and appends their REBUILDs, and every article converges.

Races, each under live writes: articles created or re-pointed while their author is renamed;
two renames in a row; articles deleted during their fan-out; a rebuild during a fan-out. The
end state is always every document equal to the projection of its rows, and no document's
version ever moved backwards (a watcher reads them all the while).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import aiomysql
import pytest
import pytest_asyncio
from searchsync.cli.reconcile import run_rebuild
from searchsync.ops.rebuild.plan import RebuildOptions
from searchsync.projection import registry_from_settings
from searchsync.runtime import Runtime

from tests.integration.article_app import article_change
from tests.integration.consumer_harness import (
    REBUILD_ON_SHARED_TABLE,
    InProcessConsumer,
    harness_env,
    type_indices,
)
from tests.integration.doc_watch import Watcher, watch_docs
from tests.integration.fanout_writes import author_write
from tests.integration.test_aggregate_types_e2e import (
    ensure_topics,
    expected,
    require_article_table,
    wait_converged,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

TOPICS = ("outbox.event.article", "outbox.event.author")
TYPES = ("article", "wiki_page")


def fanout_env(tag: str, topics: Sequence[str], **overrides: str) -> dict[str, str]:
    """`harness_env` for the wiki_page and article types on `topics`, the fan-out worker looking
    for jobs every 0.1 s and taking over a stopped worker's job after 5 s."""
    return harness_env(
        tag,
        SEARCHSYNC_KAFKA_TOPICS=",".join(topics),
        SEARCHSYNC_PROJECTION_MODULES="searchsync.projection.wiki_page,searchsync.examples.article",
        SEARCHSYNC_FANOUT_POLL_INTERVAL_S="0.1",
        SEARCHSYNC_FANOUT_LEASE_S="5",
        **overrides,
    )


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def consumer(app_pool: aiomysql.Pool) -> AsyncIterator[InProcessConsumer]:
    await require_article_table(app_pool)
    ensure_topics(TOPICS)
    c = InProcessConsumer(
        fanout_env(
            "fan",
            TOPICS,
            # slow enough that the races below meet a fan-out under way
            SEARCHSYNC_FANOUT_APPENDS_PER_S="150",
            SEARCHSYNC_FANOUT_PAGE_SIZE="10",
            **REBUILD_ON_SHARED_TABLE,
        )
    )
    async with type_indices(c.settings, TYPES):
        await c.start()
        try:
            yield c
        finally:
            assert await c.close() == 0


@contextlib.asynccontextmanager
async def watching(
    consumer: InProcessConsumer, ids: list[str], names: list[str]
) -> AsyncIterator[Watcher]:
    """Watch the articles `ids`: an author name later in `names` ranks higher."""

    def rank(source: Mapping[str, Any]) -> int:
        name = source.get("author_name")
        return names.index(name) if name in names else -1

    async with watch_docs(consumer, "article", ids, rank) as watcher:
        yield watcher


async def converge(
    consumer: InProcessConsumer, app: aiomysql.Pool, pool: aiomysql.Pool, ids: list[str]
) -> None:
    registry = registry_from_settings(consumer.settings.projection)
    del app
    await wait_converged(
        consumer, pool, {"article": await expected(registry, pool, "article", ids)}
    )


async def authors_with_articles(
    app: aiomysql.Pool, u: str, counts: dict[str, int]
) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for author, n in counts.items():
        author_id = f"fan-{u}-{author}"
        await author_write(app, author_id, f"{author} one")
        out[author] = [f"fan-{u}-{author}-{i:04d}" for i in range(n)]
        for article_id in out[author]:
            await article_change(app, article_id, author_id=author_id, title=article_id)
    return out


async def test_a_rename_reaches_articles_created_and_repointed_meanwhile(
    consumer: InProcessConsumer, app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    u = uuid.uuid4().hex[:8]
    arts = await authors_with_articles(app_pool, u, {"ann": 120, "bob": 20})
    ann, bob = f"fan-{u}-ann", f"fan-{u}-bob"
    new = [f"fan-{u}-new-{i:03d}" for i in range(20)]
    ids = arts["ann"] + arts["bob"] + new
    await converge(consumer, app_pool, consumer_pool, arts["ann"] + arts["bob"])
    async with watching(consumer, ids, ["ann one", "ann two"]):

        async def meanwhile() -> None:
            for i, article_id in enumerate(new):
                await article_change(app_pool, article_id, author_id=ann, title="new")
                if i < 10:  # re-point both ways
                    await article_change(app_pool, arts["ann"][i], author_id=bob, title="moved")
                    await article_change(app_pool, arts["bob"][i], author_id=ann, title="moved")

        await asyncio.gather(author_write(app_pool, ann, "ann two"), meanwhile())
        await converge(consumer, app_pool, consumer_pool, ids)
    assert consumer.metric("searchsync_fanout_rebuilds_total") >= 120


async def test_two_renames_in_a_row_end_with_the_last_name(
    consumer: InProcessConsumer, app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    u = uuid.uuid4().hex[:8]
    arts = await authors_with_articles(app_pool, u, {"cid": 150})
    cid = f"fan-{u}-cid"
    await converge(consumer, app_pool, consumer_pool, arts["cid"])
    async with watching(consumer, arts["cid"], ["cid one", "cid two", "cid three"]):
        await author_write(app_pool, cid, "cid two")
        await asyncio.sleep(0.3)  # the first pass is under way
        await author_write(app_pool, cid, "cid three")
        await converge(consumer, app_pool, consumer_pool, arts["cid"])


async def test_articles_deleted_during_their_fanout_end_as_their_rows_say(
    consumer: InProcessConsumer, app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    u = uuid.uuid4().hex[:8]
    arts = await authors_with_articles(app_pool, u, {"dee": 150})
    dee, ids = f"fan-{u}-dee", arts["dee"]
    await converge(consumer, app_pool, consumer_pool, ids)
    async with watching(consumer, ids, ["dee one", "dee two"]):
        await author_write(app_pool, dee, "dee two")
        for article_id in ids[::-10]:  # from the end: ahead of the fan-out's cursor
            await article_change(app_pool, article_id, hard_delete=True)
        for article_id in ids[-5::-10]:
            await article_change(app_pool, article_id, deleted=True)
        await converge(consumer, app_pool, consumer_pool, ids)


async def test_a_rebuild_during_a_fanout_loses_no_rename(
    consumer: InProcessConsumer, app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    u = uuid.uuid4().hex[:8]
    arts = await authors_with_articles(app_pool, u, {"eve": 200})
    eve, ids = f"fan-{u}-eve", arts["eve"]
    await converge(consumer, app_pool, consumer_pool, ids)
    await author_write(app_pool, eve, "eve two")
    # the live index holds this module's articles, the shared table everybody's: the sample
    # queries' top-10s differ for that reason alone, and the others' rows change meanwhile: this
    # test checks its own articles exactly, after the swap
    loose = replace(consumer.settings.rebuild, max_query_diff_rate=1.0, max_sample_mismatches=100)
    settings = replace(consumer.settings, rebuild=loose)
    rebuild = asyncio.create_task(
        run_rebuild(Runtime(settings), RebuildOptions("article"), json_lines=True)
    )
    await asyncio.sleep(0.5)
    await author_write(app_pool, eve, "eve three")  # a rename during the rebuild too
    outcome = await rebuild
    assert outcome.ok, outcome.message
    await converge(consumer, app_pool, consumer_pool, ids)
