"""The repair and the live path agree about soft-deleted rows (docs/design.md, "Tombstones and
their purge"): over an index that lost the documents of live rows, of rows soft-deleted within
the tombstone window and of rows soft-deleted before it, one rotation of the wheel the
`repair --once` command builds (its settings, `retention.min_tombstone_age` among them) re-creates
the first two kinds through the outbox and the live consumer, and leaves the third alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from datetime import timedelta

import aiomysql
import pytest
from searchsync.clock import utc_now
from searchsync.mysql.outbox import MysqlOutbox
from searchsync.mysql.truth import MysqlTruth
from searchsync.ops.repair.generations import MysqlWheelState
from searchsync.ops.repair.model import FindingKind
from searchsync.ops.repair.span import Healer
from searchsync.ops.repair.wheel import Wheel
from searchsync.projection import default_registry
from searchsync.search.client import make_es_client
from searchsync.search.es_index import EsIndex
from searchsync.writer import PageWriter

from tests.integration.consumer_harness import (
    InProcessConsumer,
    converged,
    drop_indices,
    expected_documents,
    harness_env,
    prepare_index,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


async def test_a_rotation_recreates_live_and_fresh_tombstones_and_leaves_purged_ones(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> None:
    # a one-hour window: a row soft-deleted two hours ago is past it (the default of 7 days
    # would still expect its tombstone), so the wheel must take the window from the settings
    env = harness_env("rs", SEARCHSYNC_RETENTION_MIN_TOMBSTONE_AGE="1h")
    consumer = InProcessConsumer(env)
    settings = consumer.settings
    assert settings.retention.tombstone_minimum == timedelta(hours=1)
    alias = settings.alias("wiki_page")
    physical = f"{alias}_v1"
    await prepare_index(settings)
    es = make_es_client(settings)
    live = [f"{id_prefix}live{n}" for n in range(3)]
    fresh = [f"{id_prefix}fresh{n}" for n in range(3)]
    old = [f"{id_prefix}old{n}" for n in range(2)] + [f"{id_prefix}older{n}" for n in range(2)]
    every = live + fresh + old
    try:
        await consumer.start()
        now_writer = PageWriter(app_pool)
        for i in live + fresh:
            await now_writer.create(i, f"title {i}", "body", {})
        for i in fresh:
            await now_writer.soft_delete(i)
        for n, i in enumerate(old):  # deleted two hours and thirty days ago
            ago = timedelta(hours=2) if n < 2 else timedelta(days=30)
            past = PageWriter(app_pool, clock=lambda ago=ago: utc_now() - ago)
            await past.create(i, f"title {i}", "body", {})
            await past.soft_delete(i)
        truth = MysqlTruth(consumer_pool)

        async def all_converged() -> bool:
            ok, _ = await converged(es, alias, await expected_documents(truth, every, {}))
            return ok

        await wait_for(all_converged, 120, "every row's document written by the live path")
        for i in old:  # the live path wrote a tombstone carrying the old delete time
            source = (await es.get(index=alias, id=i))["_source"]
            assert source["is_deleted"] is True and source["tombstoned_at"] < (
                utc_now() - timedelta(hours=1)
            ).strftime("%Y-%m-%dT%H:%M:%S")

        # Lose every document behind searchsync's back (a node forgets a deleted version after
        # index.gc_deletes; the test forgets at once so the REBUILDs are not refused meanwhile).
        await es.indices.put_settings(index=physical, settings={"index.gc_deletes": "0s"})
        for i in every:
            await es.delete(index=physical, id=i)
        await es.indices.refresh(index=physical)

        repair = dataclasses.replace(
            settings.repair, content_share=1.0, bucket_count=3, settle_s=2.0
        )
        assert settings.retention.tombstone_minimum == timedelta(hours=1)
        wheel = Wheel(
            projectors=[default_registry().get("wiki_page")],
            alias_for=settings.alias,
            truth=MysqlTruth(consumer_pool, id_prefix=id_prefix),
            index=EsIndex(es),
            state=MysqlWheelState(consumer_pool, scope=f"s{uuid.uuid4().hex[:8]}/"),
            healer=Healer(MysqlOutbox(consumer_pool), appends_per_s=50),
            settings=repair,
            tombstone_minimum=settings.retention.tombstone_minimum,
        )
        report = await wheel.rotation()
        found = {(f.kind, f.id) for b in report.buckets for f in b.findings}
        assert found == {(FindingKind.MISSING, i) for i in live + fresh}
        assert report.interrupted == 0
        assert sum(b.appended for b in report.buckets) == len(live + fresh)

        healed = live + fresh

        async def healed_converged() -> bool:
            ok, _ = await converged(es, alias, await expected_documents(truth, healed, {}))
            return ok

        await wait_for(healed_converged, 120, "the live and fresh documents re-created")
        for i in fresh:  # a tombstone again, dated by its row
            source = (await es.get(index=alias, id=i))["_source"]
            assert source["is_deleted"] is True and "tombstoned_at" in source
        await es.indices.refresh(index=physical)
        for i in old:
            assert not await es.exists(index=physical, id=i), i  # purged stays purged
        again = await wheel.rotation()
        assert sum(again.counts().values()) == 0, again.counts()
    finally:
        with contextlib.suppress(Exception):
            await consumer.close()
        await es.close()
        await drop_indices(settings)
