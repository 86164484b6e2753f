"""Two aggregate types in one consumer run, chosen by configuration (``projection.modules``).

wiki_page rows change through `PageWriter`; article rows (the example type of
searchsync/examples/article.py, tables from schemas/sql/examples/article.sql: the article, its
tags in article_tag, its author) through plain SQL plus `append_outbox` in one transaction, as an
application of its own would (tests/integration/article_app.py). Both kinds of event go
through the real connector to their own topic, and each type converges in its own alias.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiomysql
import pytest
import pytest_asyncio
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from elasticsearch import NotFoundError
from searchsync.mysql.truth import MysqlTruth
from searchsync.projection import Document, ProjectorRegistry, registry_from_settings
from searchsync.search.admin import init_index
from searchsync.search.client import make_es_client
from searchsync.writer import PageWriter

from tests.integration.article_app import article_change, put_author
from tests.integration.conftest import KAFKA
from tests.integration.conftest_mysql import fetch_all
from tests.integration.consumer_harness import (
    InProcessConsumer,
    converged,
    harness_env,
    wait_for,
)
from tests.timing import deadline as deadline_after

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

TOPICS = ("outbox.event.wiki_page", "outbox.event.article")
MODULES = "searchsync.projection.wiki_page,searchsync.examples.article"
TYPES = ("article", "wiki_page")


def ensure_topics(topics: tuple[str, ...], deadline_s: float = 30) -> None:
    """Create the topics if missing (as deploy/local/kafka.sh does) and wait for their leaders."""
    admin = AdminClient({"bootstrap.servers": KAFKA})
    futures = admin.create_topics(
        [NewTopic(t, num_partitions=3, replication_factor=1) for t in topics]
    )
    for future in futures.values():
        try:
            future.result(30)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    deadline = deadline_after(deadline_s)
    while True:
        meta = admin.list_topics(timeout=10)
        ready = all(
            t in meta.topics
            and meta.topics[t].error is None
            and meta.topics[t].partitions
            and all(p.leader >= 0 for p in meta.topics[t].partitions.values())
            for t in topics
        )
        if ready:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"topics {topics} have no leader after {deadline_s}s")
        time.sleep(0.2)


async def require_article_table(pool: aiomysql.Pool) -> None:
    rows = await fetch_all(
        pool,
        "SELECT COUNT(*) AS n FROM information_schema.tables"
        " WHERE table_schema = DATABASE()"
        " AND table_name IN ('article', 'article_tag', 'author')",
        (),
    )
    if rows[0]["n"] != 3:
        pytest.fail(
            "a table of the article example is missing: run deploy/local/migrate.sh (it applies"
            " schemas/sql/examples/*.sql)",
            pytrace=False,
        )


@pytest_asyncio.fixture(loop_scope="session")
async def consumer(app_pool: aiomysql.Pool) -> AsyncIterator[InProcessConsumer]:
    await require_article_table(app_pool)
    ensure_topics(TOPICS)
    c = InProcessConsumer(
        harness_env(
            "types",
            SEARCHSYNC_KAFKA_TOPICS=",".join(TOPICS),
            SEARCHSYNC_PROJECTION_MODULES=MODULES,
        )
    )
    registry = registry_from_settings(c.settings.projection)
    assert registry.types() == TYPES
    es = make_es_client(c.settings)
    try:
        for kind in TYPES:  # what `searchsync index init --type <kind>` does
            await init_index(
                es,
                c.settings.alias(kind),
                registry.get(kind).mapping,
                schema_version=registry.get(kind).schema_version,
            )
        await c.start()
        try:
            yield c
        finally:
            code = await c.close()
            assert code == 0, f"consumer exited with {code}"
    finally:
        for kind in TYPES:
            with contextlib.suppress(NotFoundError):
                await es.indices.delete(index=f"{c.settings.alias(kind)}_v1")
        await es.close()


async def expected(
    registry: ProjectorRegistry, pool: aiomysql.Pool, kind: str, ids: list[str]
) -> dict[str, Document]:
    """The projection of each row now, or the tombstone at its floor for a hard-deleted id."""
    projector = registry.get(kind)
    truth = MysqlTruth(pool)
    rows = await truth.rows_by_id(projector, ids, primary=True)
    floor = await truth.revision_floors(kind, ids, primary=True)
    return {
        i: projector.project(rows[i]) if i in rows else projector.tombstone(i, floor[i])
        for i in ids
    }


async def wait_converged(
    consumer: InProcessConsumer, pool: aiomysql.Pool, want: Mapping[str, Mapping[str, Document]]
) -> None:
    es = make_es_client(consumer.settings)
    last = [""]
    try:

        async def check() -> bool:
            for kind, docs in want.items():
                ok, why = await converged(es, consumer.settings.alias(kind), docs)
                if not ok:
                    last[0] = f"{kind}: {why}"
                    return False
            return True

        try:
            await wait_for(check, 120, "both types equal the projection of their rows")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; last difference: {last[0]}") from None
    finally:
        await es.close()


async def test_two_types_in_one_run_each_converge_in_their_own_alias(
    consumer: InProcessConsumer, app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    u = uuid.uuid4().hex[:8]
    pages = [f"types-{u}-p{i}" for i in range(3)]
    articles = [f"types-{u}-a{i}" for i in range(4)]
    writer = PageWriter(app_pool)
    qixia = {"entity_id": "character_qixia", "entity_type": "character", "title": "齐夏"}
    await writer.create(pages[0], "Page zero", "c", {"RELATED_CHARACTER": [qixia]})
    await writer.create(pages[1], "Page one", "c", {})
    await writer.create(pages[2], "Page two", "c", {})
    author = f"types-{u}-u"
    await put_author(app_pool, author, "阿尔托莉雅")
    for i, article_id in enumerate(articles):
        assert (
            await article_change(
                app_pool, article_id, title=f"Article {i}", tags=["t"], author_id=author
            )
            == 1
        )
    await writer.update(pages[1], relations={"RELATED_CHARACTER": [qixia, qixia]})
    await writer.soft_delete(pages[2])
    # a change of the children only: the tags change and the article's revision rises with them
    assert await article_change(app_pool, articles[0], tags=["游戏", "rules", "游戏"]) == 2
    assert await article_change(app_pool, articles[1], deleted=True) == 2
    assert await article_change(app_pool, articles[2], hard_delete=True) == 2
    assert await article_change(app_pool, articles[3], title="Again", author_id=None) == 2

    registry = registry_from_settings(consumer.settings.projection)
    want = {
        "wiki_page": await expected(registry, consumer_pool, "wiki_page", pages),
        "article": await expected(registry, consumer_pool, "article", articles),
    }
    await wait_converged(consumer, consumer_pool, want)

    assert want["article"][articles[0]].body["tags"] == ["游戏", "rules"]
    assert want["article"][articles[0]].body["author_name"] == "阿尔托莉雅"
    assert want["article"][articles[3]].body["author_name"] is None
    assert want["article"][articles[1]].is_deleted and want["article"][articles[2]].is_deleted
    assert want["wiki_page"][pages[1]].body["relations"] == {
        "RELATED_CHARACTER": ["character:character_qixia"]
    }
    es = make_es_client(consumer.settings)
    try:  # each type only in its own alias
        crossed: Any = await es.mget(index=consumer.settings.alias("article"), ids=pages)
        assert not any(d.get("found") for d in crossed["docs"])
        crossed = await es.mget(index=consumer.settings.alias("wiki_page"), ids=articles)
        assert not any(d.get("found") for d in crossed["docs"])
    finally:
        await es.close()
    assert consumer.metric("outbox_dead_total") == 0
