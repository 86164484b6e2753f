"""Owner epochs on the real stack (docs/design.md, invariant 17, "Owner epochs"): the store's
contract on MariaDB, and a member that lost its partition while it rewrote an article (it read the
author's name, then stalled) writing nothing back after the new owner wrote the newer name."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence

import aiomysql
import pytest
from searchsync.errors import Disposition, ErrorCode, TransientError
from searchsync.mysql.owner_epochs import OwnerEpochs
from searchsync.mysql.pool import create_pool
from searchsync.mysql.truth import MysqlTruth
from searchsync.projection import registry_from_settings
from searchsync.search.client import make_es_client
from searchsync.search.elasticsearch import EsIndexAdmin
from searchsync.search.es_index import EsIndex
from searchsync.search.port import StoredDocument
from searchsync.search.sink import Sink
from searchsync.stream.fence import SchemaFence
from searchsync.stream.processor import Processor
from searchsync.stream.work import Work
from searchsync.types import Key, Operation, RawMessage, ThinEvent

from tests.integration.article_app import article_change
from tests.integration.conftest_mysql import MysqlTarget, fetch_all, root_socket
from tests.integration.consumer_harness import InProcessConsumer, harness_env, type_indices
from tests.integration.fanout_writes import author_write
from tests.integration.test_aggregate_types_e2e import require_article_table
from tests.scratch import admin_execute
from tests.timing import scaled

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


@contextlib.asynccontextmanager
async def _impatient_pool(target: MysqlTarget) -> AsyncIterator[aiomysql.Pool]:
    """One connection that waits at most 1 s for a row lock."""
    pool = await create_pool(
        host=target.host,
        port=target.port,
        user=target.consumer_user,
        password=target.consumer_password,
        database=target.database,
        minsize=1,
        maxsize=1,
    )
    try:
        async with pool.acquire() as conn, conn.cursor() as cur:
            await cur.execute("SET SESSION innodb_lock_wait_timeout = 1")
        yield pool
    finally:
        pool.close()
        await pool.wait_closed()


async def test_a_take_moves_the_epoch_and_waits_for_a_rewrite_in_progress(
    consumer_pool: aiomysql.Pool, mysql_target: MysqlTarget
) -> None:
    group, tp = f"it-owner-{uuid.uuid4().hex[:8]}", ("t", 0)
    old, new = OwnerEpochs(consumer_pool, group, "old"), OwnerEpochs(consumer_pool, group, "new")
    await old.take([tp])
    await old.take([tp])  # held: no second take
    assert old.held() == {tp: 1}
    async with _impatient_pool(mysql_target) as impatient:
        hasty = OwnerEpochs(impatient, group, "hasty")
        async with old.fenced([tp, ("t", 1)]) as ours:
            assert ours == {tp}  # ("t", 1) was never taken
            taking = asyncio.create_task(new.take([tp]))
            with pytest.raises(TransientError) as caught:
                await hasty.take([tp])  # the shared lock holds every take back
            assert not taking.done()
        assert caught.value.code is ErrorCode.OWNER_FENCED
        assert "previous owner" in caught.value.message
        assert hasty.held() == {}
    await asyncio.wait_for(taking, scaled(20))
    assert new.held() == {tp: 2}
    async with old.fenced([tp]) as ours:
        assert ours == frozenset()  # the epoch moved on: nothing of `old`'s may be written
    assert old.held() == {}  # forgotten: its next work takes the epoch again
    await old.take([tp])
    async with new.fenced([tp]) as ours:
        assert ours == frozenset()
    rows = await fetch_all(
        consumer_pool,
        "SELECT epoch, holder FROM search_partition_owner WHERE group_id = %s",
        (group,),
    )
    assert rows == [{"epoch": 3, "holder": "old"}]


class _StallingIndex(EsIndex):
    """`EsIndex` whose stored-projection read (a rewrite's, after the truth was read) stops at a
    gate the test opens: a member stalled between its read and its write."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.reached = asyncio.Event()
        self.gate = asyncio.Event()

    async def get_documents(
        self, alias: str, ids: Sequence[str]
    ) -> dict[str, StoredDocument | None]:
        self.reached.set()
        await self.gate.wait()
        return await super().get_documents(alias, ids)


@pytest.mark.parametrize("fenced", [True, False], ids=["fenced", "unfenced"])
async def test_a_member_stalled_in_a_rewrite_puts_no_older_author_back(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, fenced: bool
) -> None:
    """`unfenced` shows what the fence prevents: without owner epochs the stalled member writes
    the older name back at the same revision."""
    await require_article_table(app_pool)
    env = harness_env(
        "own",
        SEARCHSYNC_PROJECTION_MODULES="searchsync.projection.wiki_page,searchsync.examples.article",
    )
    settings = InProcessConsumer(env).settings
    registry = registry_from_settings(settings.projection)
    alias = settings.alias("article")
    u = uuid.uuid4().hex[:8]
    author, art = f"own-{u}-author", f"own-{u}-art"
    group = settings.kafka.group_id
    async with type_indices(settings, ["article"]):
        es = make_es_client(settings)
        try:
            fence = SchemaFence(EsIndexAdmin(es), interval_s=60.0)

            def member(index: EsIndex, name: str) -> Processor:
                return Processor(
                    registry=registry,
                    truth=MysqlTruth(consumer_pool),
                    sink=Sink(index),
                    alias_for=settings.alias,
                    fence=fence,
                    owners=OwnerEpochs(consumer_pool, group, name) if fenced else None,
                )

            await author_write(app_pool, author, "first")
            revision = await article_change(app_pool, art, author_id=author, title="t")
            stalled_index = _StallingIndex(es)
            old, new = member(stalled_index, "old"), member(EsIndex(es), "new")

            def work(n: int, operation: Operation) -> Work:
                event = ThinEvent(f"e{n}", "article", art, operation, revision)
                return Work(Key("article", art), (event,), (RawMessage("t", 0, n),), 1)

            [created] = await new.process([work(0, Operation.UPSERT)])
            assert created.finished
            await author_write(app_pool, author, "second")
            old.released([("t", 0)])  # `old` is assigned the partition, then stalls
            stalled = asyncio.create_task(old.process([work(1, Operation.REBUILD)]))
            await asyncio.wait_for(stalled_index.reached.wait(), scaled(20))  # it read "second"
            await author_write(app_pool, author, "third")
            new.released([("t", 0)])  # the rebalance: `new` owns the partition now
            [rewritten] = await new.process([work(1, Operation.REBUILD)])
            assert rewritten.finished
            stalled_index.gate.set()
            [late] = await asyncio.wait_for(stalled, scaled(20))
            stored = await es.get(index=alias, id=art)
        finally:
            await es.close()
    assert stored["_version"] == revision
    if fenced:
        assert stored["_source"]["author_name"] == "third"
        assert _code(late) is ErrorCode.OWNER_FENCED
    else:
        assert stored["_source"]["author_name"] == "second"  # the older name, back
        assert late.finished


def _code(work: Work) -> ErrorCode | None:
    return work.code


async def test_a_consumer_without_the_owner_table_grant_holds_and_names_the_fix(
    mysql_target: MysqlTarget,
) -> None:
    """A deployment that missed the migration or its grants: the take is OWNER_FENCED (systemic:
    nothing is dead-lettered) and names what to apply."""
    user, password = f"own_{uuid.uuid4().hex[:10]}", f"pw-{uuid.uuid4().hex[:12]}"
    await admin_execute(
        root_socket(),
        mysql_target.database,
        [
            f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'",
            f"GRANT SELECT ON `{mysql_target.database}`.`search_partition_owner` TO '{user}'@'%'",
        ],
    )
    pool = await create_pool(
        host=mysql_target.host,
        port=mysql_target.port,
        user=user,
        password=password,
        database=mysql_target.database,
        minsize=1,
        maxsize=1,
    )
    try:
        owners = OwnerEpochs(pool, f"it-owner-{uuid.uuid4().hex[:8]}")
        with pytest.raises(TransientError) as caught:
            await owners.take([("t", 0)])
    finally:
        pool.close()
        await pool.wait_closed()
        await admin_execute(root_socket(), mysql_target.database, [f"DROP USER '{user}'@'%'"])
    assert caught.value.code is ErrorCode.OWNER_FENCED
    assert caught.value.code.disposition is Disposition.SYSTEMIC
    assert "013_partition_owner.sql" in caught.value.message
    assert "schema grants" in caught.value.message
    assert owners.held() == {}
