"""Both application-side writers end to end: MariaDB -> Debezium -> Kafka -> searchsync ->
Elasticsearch. wiki_page rows change through `AggregateWriter` (PyMySQL, in a thread) and
`AsyncAggregateWriter` (aiomysql), the same ids through both; at quiescence each document equals
the projection of its row (or the tombstone at its floor), at the revision the writers returned.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import aiomysql
import pytest
import pytest_asyncio
from searchsync.mysql.truth import MysqlTruth
from searchsync.search.client import make_es_client
from searchsync.writer import WIKI_PAGE, AggregateWriter, AsyncAggregateWriter

from tests.integration import conftest_mysql as fx
from tests.integration.conftest_mysql import MysqlTarget, pymysql_connection, revision_floors
from tests.integration.consumer_harness import (
    InProcessConsumer,
    converged,
    drop_indices,
    expected_documents,
    harness_env,
    prepare_index,
    wait_for,
)

mysql_target = fx.mysql_target
app_pool = fx.app_pool
consumer_pool = fx.consumer_pool

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

REL = '{"RELATED_CHARACTER": [{"entity_id": "c1", "entity_type": "character", "title": "hero"}]}'


def page(title: str, relations: str = "{}") -> dict[str, str]:
    return {"title": title, "content": f"about {title}", "relations_json": relations}


@pytest_asyncio.fixture(loop_scope="session")
async def consumer(app_pool: aiomysql.Pool) -> AsyncIterator[InProcessConsumer]:
    c = InProcessConsumer(harness_env("appw"))
    await prepare_index(c.settings)
    await c.start()
    yield c
    code = await c.close()
    await drop_indices(c.settings)
    assert code == 0, f"consumer exited with {code}"


def sync_changes(target: MysqlTarget, ids: list[str]) -> dict[str, int]:
    """The PyMySQL writer's part; the revision each id ends at."""
    conn = pymysql_connection(target)
    writer = AggregateWriter(conn, WIKI_PAGE)
    last: dict[str, int] = {}
    try:
        live, soft, hard, shared = ids
        for aggregate_id in ids:
            with writer.create(aggregate_id, page("sync 1", REL)) as change:
                pass
        with writer.update(live, {"title": "sync 2"}) as change:
            pass
        last[live] = change.revision
        with writer.soft_delete(soft) as change:
            pass
        last[soft] = change.revision
        with writer.hard_delete(hard) as change:
            pass
        last[hard] = change.revision
        with writer.soft_delete(shared) as change:
            pass
    finally:
        conn.close()
    return last


async def test_both_writers_converge_in_the_index(
    consumer: InProcessConsumer,
    mysql_target: MysqlTarget,
    app_pool: aiomysql.Pool,
    consumer_pool: aiomysql.Pool,
) -> None:
    u = uuid.uuid4().hex[:8]
    ids = [f"appw-{u}-{name}" for name in ("live", "soft", "hard", "shared")]
    reborn = f"appw-{u}-reborn"
    writer = AsyncAggregateWriter(app_pool, WIKI_PAGE)

    last = await asyncio.to_thread(sync_changes, mysql_target, ids)
    shared = ids[3]
    async with writer.restore(shared) as change:  # the other driver continues the same id
        pass
    async with writer.update(shared, {"title": "async 3"}) as change:
        pass
    last[shared] = change.revision
    async with writer.create(reborn, page("once")) as change:
        pass
    async with writer.hard_delete(reborn) as change:
        pass
    async with writer.create(reborn, page("again")) as change:
        pass
    last[reborn] = change.revision
    all_ids = [*ids, reborn]

    expected = await expected_documents(
        MysqlTruth(consumer_pool), all_ids, await revision_floors(consumer_pool, all_ids)
    )
    assert {i: expected[i].source_revision for i in last} == last
    assert last == {ids[0]: 2, ids[1]: 2, ids[2]: 2, shared: 4, reborn: 3}
    assert expected[ids[1]].is_deleted and expected[ids[2]].is_deleted
    assert not expected[shared].is_deleted and not expected[reborn].is_deleted

    es = make_es_client(consumer.settings)
    why = [""]
    try:

        async def check() -> bool:
            ok, why[0] = await converged(es, consumer.settings.alias("wiki_page"), expected)
            return ok

        try:
            await wait_for(check, 120, "every document equals the projection of its row")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; last difference: {why[0]}") from None
    finally:
        await es.close()
    assert consumer.metric("outbox_dead_total") == 0
