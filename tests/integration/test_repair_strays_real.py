"""The repair's stray sweep on the real stack (docs/design.md, "Repair"; invariants 9, 13).

Five orphan documents without ``sync_hash`` are put straight into the index (three shaped as the
consumer writes them, two as another writer might), and two documents of existing rows lose their
``sync_hash`` or get another bucket's. No bucket's range query returns them at their own key; one
rotation must append a REBUILD for each (the orphans' at v + 1, with the revision floor raised),
and the live consumer must turn the orphans into tombstones and rewrite the others with their
``sync_hash``; a second rotation then finds nothing.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import aiomysql
import pytest
from searchsync.config import RepairSettings
from searchsync.mysql.outbox import MysqlOutbox
from searchsync.mysql.truth import MysqlTruth
from searchsync.observability.repair_metrics import RepairMetrics
from searchsync.ops.repair.generations import MysqlWheelState
from searchsync.ops.repair.model import FindingKind
from searchsync.ops.repair.span import Healer
from searchsync.ops.repair.wheel import Wheel, run_repair
from searchsync.projection import default_registry, sync_hash
from searchsync.search.client import make_es_client
from searchsync.search.es_index import EsIndex
from searchsync.types import HASH_SPACE
from searchsync.writer import PageWriter

from tests.integration.conftest_mysql import fetch_all, revision_floors
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


async def _outbox_since(pool: aiomysql.Pool, after: int, prefix: str) -> set[tuple[str, str, int]]:
    rows = await fetch_all(
        pool,
        "SELECT aggregate_id, operation, source_revision FROM search_outbox WHERE id > %s"
        " AND aggregate_type = 'wiki_page' AND aggregate_id LIKE %s",
        (after, prefix + "%"),
    )
    return {(r["aggregate_id"], r["operation"], int(r["source_revision"])) for r in rows}


async def test_one_rotation_heals_the_documents_no_bucket_holds(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> None:
    consumer = InProcessConsumer(harness_env("rs"))
    settings = consumer.settings
    alias = settings.alias("wiki_page")
    physical = f"{alias}_v1"
    projector = default_registry().get("wiki_page")
    await prepare_index(settings)
    es = make_es_client(settings)
    writer = PageWriter(app_pool)
    try:
        await consumer.start()
        ok = [f"{id_prefix}ok{n}" for n in range(6)]
        nokey, wrongkey = f"{id_prefix}nokey", f"{id_prefix}wrongkey"
        rows = [*ok, nokey, wrongkey]
        for i in rows:
            await writer.create(i, f"title {i}", "body", {})

        async def check(ids: list[str]) -> bool:
            want = await expected_documents(
                MysqlTruth(consumer_pool), ids, await revision_floors(consumer_pool, ids)
            )
            return (await converged(es, alias, want))[0]

        await wait_for(lambda: check(rows), 120, "the consumer indexes the rows")

        # Behind searchsync's back: two documents of rows lose their bucket key...
        for i, key in [(nokey, None), (wrongkey, (sync_hash("wiki_page", wrongkey) + 2**31))]:
            doc = await es.get(index=physical, id=i)
            body = {k: v for k, v in doc["_source"].items() if k != "sync_hash"}
            if key is not None:
                body["sync_hash"] = key % HASH_SPACE
            await es.index(
                index=physical,
                id=i,
                document=body,
                version=doc["_version"],
                version_type="external_gte",
            )
        # ...and five orphans arrive without one: three as the consumer would write them (at 3),
        # two as another writer might (internal versions: 1)
        orphans = [f"{id_prefix}ghost{n}" for n in range(5)]
        for n, i in enumerate(orphans):
            if n < 3:
                row = {"id": i, "title": "ghost", "content": "x", "relations_json": "{}"}
                body = projector.project({**row, "revision": 3, "deleted_at": None}).body
                body = {k: v for k, v in body.items() if k != "sync_hash"}
                await es.index(
                    index=physical, id=i, document=body, version=3, version_type="external"
                )
            else:
                await es.index(index=physical, id=i, document={"title": "foreign"})
        await es.indices.refresh(index=physical)
        [top] = await fetch_all(
            consumer_pool, "SELECT COALESCE(MAX(id), 0) AS m FROM search_outbox", ()
        )
        before = int(top["m"])
        revisions = {
            i: int(r["revision"])
            for i, r in (
                await MysqlTruth(consumer_pool).rows_by_id(
                    projector, [nokey, wrongkey], primary=True
                )
            ).items()
        }

        wheel = Wheel(
            projectors=[projector],
            alias_for=settings.alias,
            truth=MysqlTruth(consumer_pool, id_prefix=id_prefix),
            index=EsIndex(es),
            state=MysqlWheelState(consumer_pool, scope=f"t{uuid.uuid4().hex[:8]}/"),
            healer=Healer(MysqlOutbox(consumer_pool), appends_per_s=50),
            settings=RepairSettings(
                bucket_count=4, page_size=4, page_min=2, content_share=1.0, settle_s=1.0
            ),
        )
        reports: list[Any] = []
        report = await run_repair(
            wheel, settings, daemon=False, metrics=RepairMetrics(), on_report=reports.append
        )
        mine = {(f.kind, f.id) for f in report.findings() if f.id.startswith(id_prefix)}
        assert mine == {
            (FindingKind.STRAY, nokey),
            (FindingKind.STRAY, wrongkey),
            *((FindingKind.ORPHAN, i) for i in orphans),
        }
        assert report.complete and report.strays[0].misplaced >= 1
        assert await _outbox_since(consumer_pool, before, id_prefix) == {
            (nokey, "REBUILD", revisions[nokey]),
            (wrongkey, "REBUILD", revisions[wrongkey]),
            *((i, "REBUILD", 4) for i in orphans[:3]),
            *((i, "REBUILD", 2) for i in orphans[3:]),
        }
        assert await revision_floors(consumer_pool, orphans) == {
            **{i: 4 for i in orphans[:3]},
            **{i: 2 for i in orphans[3:]},
        }

        # The live consumer heals them: tombstones at v + 1, the rows' documents rewritten.
        every = [*rows, *orphans]
        await wait_for(lambda: check(every), 120, "the strays are healed")
        for i in [nokey, wrongkey, *orphans]:
            doc = await es.get(index=alias, id=i)
            assert doc["_source"]["sync_hash"] == sync_hash("wiki_page", i)
            assert doc["_source"]["is_deleted"] is (i in orphans)
        await es.indices.refresh(index=physical)
        again = await wheel.rotation()
        assert not [f for f in again.findings() if f.id.startswith(id_prefix)]
        assert again.strays[0].outside == 0
    finally:
        with contextlib.suppress(Exception):
            await consumer.close()
        await es.close()
        await drop_indices(settings)
