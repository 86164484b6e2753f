"""The repair wheel's generations and epochs on the real stack (docs/design.md, "Repair";
invariant 13): a scan cut off mid-bucket (a failing side, or a cancelled task) reports no
orphan and no missing document from its partial pass, and the next run restarts the bucket
from its first key; changing the bucket count starts a new epoch without false findings.

No consumer runs here: the documents are written as the consumer writes them (the projection
of the row at its revision, external version), and the healer only records what it would
append, so what the wheel finds is exactly what was set up.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import aiomysql
import pytest
from elasticsearch import AsyncElasticsearch
from searchsync.config import RepairSettings
from searchsync.mysql.truth import MysqlTruth
from searchsync.ops.repair.generations import MysqlWheelState, snapshot
from searchsync.ops.repair.model import FindingKind
from searchsync.ops.repair.span import Healer
from searchsync.ops.repair.wheel import Wheel
from searchsync.ops.status_probes import repair_section
from searchsync.projection import Projector, default_registry
from searchsync.search.client import make_es_client
from searchsync.search.es_index import EsIndex
from searchsync.search.port import StoredDocument
from searchsync.types import BucketCursor
from searchsync.writer import PageWriter

from tests.fakes.outbox import FakeOutbox
from tests.integration.consumer_harness import (
    InProcessConsumer,
    drop_indices,
    harness_env,
    prepare_index,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


class _CutIndexSide(EsIndex):
    """The real engine, cut off at its `cut_at`-th bucket page: it raises, or (`hang`)
    signals `reached` and waits forever, for the test to cancel the scan."""

    def __init__(self, client: AsyncElasticsearch, cut_at: int, *, hang: bool = False) -> None:
        super().__init__(client)
        self._cut_at = cut_at
        self._hang = hang
        self.pages = 0
        self.reached = asyncio.Event()

    async def bucket_page(
        self, alias: str, lo: int, hi: int, after: BucketCursor | None, limit: int, *, content: bool
    ) -> list[StoredDocument]:
        self.pages += 1
        if self.pages >= self._cut_at:
            self.reached.set()
            if not self._hang:
                raise ConnectionError("injected: Elasticsearch went away mid-bucket")
            await asyncio.Event().wait()
        return await super().bucket_page(alias, lo, hi, after, limit, content=content)


async def _rows_and_docs(
    app_pool: aiomysql.Pool,
    consumer_pool: aiomysql.Pool,
    es: Any,
    physical: str,
    projector: Projector,
    ids: list[str],
    *,
    without_doc: frozenset[str] = frozenset(),
) -> None:
    """Rows for `ids`; for each but `without_doc`, the document the consumer would write."""
    writer = PageWriter(app_pool)
    for i in ids:
        await writer.create(i, f"title {i}", "body", {})
    rows = await MysqlTruth(consumer_pool).rows_by_id(projector, ids, primary=True)
    for i in ids:
        if i in without_doc:
            continue
        row = rows[i]
        await es.index(
            index=physical,
            id=i,
            document=projector.project(row).body,
            version=int(row["revision"]),
            version_type="external",
        )


async def _orphans(es: Any, physical: str, projector: Projector, ids: list[str]) -> None:
    for i in ids:
        row = {
            "id": i,
            "title": "ghost",
            "content": "x",
            "relations_json": "{}",
            "revision": 3,
            "deleted_at": None,
        }
        body = projector.project(row).body
        await es.index(index=physical, id=i, document=body, version=3, version_type="external")


def _wheel(
    consumer_pool: aiomysql.Pool,
    es: Any,
    alias_for: Any,
    id_prefix: str,
    scope: str,
    *,
    m: int,
    index: Any = None,
) -> tuple[Wheel, FakeOutbox]:
    outbox = FakeOutbox()
    wheel = Wheel(
        projectors=[default_registry().get("wiki_page")],
        alias_for=alias_for,
        truth=MysqlTruth(consumer_pool, id_prefix=id_prefix),
        index=index if index is not None else EsIndex(es),
        state=MysqlWheelState(consumer_pool, scope=scope),
        healer=Healer(outbox, appends_per_s=1_000),
        # pages of 2 (pinned), so a bucket takes several pages on each side
        settings=RepairSettings(
            bucket_count=m, page_size=2, page_min=2, page_max=2, content_share=1.0, settle_s=0.5
        ),
    )
    return wheel, outbox


async def test_an_interrupted_scan_reports_no_deletions_and_the_next_run_restarts_the_bucket(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> None:
    settings = InProcessConsumer(harness_env("ri")).settings
    alias = settings.alias("wiki_page")
    physical = f"{alias}_v1"
    projector = default_registry().get("wiki_page")
    await prepare_index(settings)
    es = make_es_client(settings)
    scope = f"t{uuid.uuid4().hex[:8]}/"
    try:
        ids = [f"{id_prefix}p{n:02d}" for n in range(12)]
        missing = frozenset({ids[1], ids[6], ids[11]})
        orphans = [f"{id_prefix}ghost{n}" for n in range(2)]
        await _rows_and_docs(
            app_pool, consumer_pool, es, physical, projector, ids, without_doc=missing
        )
        await _orphans(es, physical, projector, orphans)
        await es.indices.refresh(index=physical)
        state = MysqlWheelState(consumer_pool, scope=scope)

        # 1. Elasticsearch fails at its second page: MySQL was read to the end, ES only to its
        # first two ids, so a naive compare would call most rows missing.
        cut = _CutIndexSide(es, cut_at=2)
        wheel, outbox = _wheel(consumer_pool, es, settings.alias, id_prefix, scope, m=1, index=cut)
        report = await wheel.rotation()
        assert report.interrupted == 1 and cut.pages == 2
        assert sum(report.counts().values()) == 0 and outbox.events == []
        [bucket] = (await state.buckets(report.epochs["wiki_page"])).values()
        assert (bucket.generation, bucket.running_generation) == (0, 1)
        assert bucket.last_complete_at is None

        # 2. The scan is cancelled (a killed process) while it waits on its third ES page.
        hang = _CutIndexSide(es, cut_at=3, hang=True)
        wheel, outbox = _wheel(consumer_pool, es, settings.alias, id_prefix, scope, m=1, index=hang)
        task = asyncio.create_task(wheel.rotation())
        await asyncio.wait_for(hang.reached.wait(), 120)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert outbox.events == []
        [bucket] = (await state.buckets(report.epochs["wiki_page"])).values()
        assert (bucket.generation, bucket.running_generation) == (0, 1)

        # 3. The next run scans the bucket from its first key and finds exactly what is there.
        wheel, outbox = _wheel(consumer_pool, es, settings.alias, id_prefix, scope, m=1)
        again = await wheel.rotation()
        [scan] = again.buckets
        assert scan.interrupted is None and scan.generation == 1
        assert (scan.rows, scan.docs) == (12, 9 + 2)
        assert {(f.kind, f.id) for f in scan.findings} == {
            *((FindingKind.MISSING, i) for i in missing),
            *((FindingKind.ORPHAN, i) for i in orphans),
        }
        [bucket] = (await state.buckets(again.epochs["wiki_page"])).values()
        assert (bucket.generation, bucket.running_generation) == (1, None)
        assert bucket.last_counts == {"missing": 3, "orphan": 2}
    finally:
        await es.close()
        await drop_indices(settings)


async def test_changing_the_bucket_count_starts_a_new_epoch_without_false_findings(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> None:
    settings = InProcessConsumer(harness_env("re")).settings
    alias = settings.alias("wiki_page")
    physical = f"{alias}_v1"
    projector = default_registry().get("wiki_page")
    await prepare_index(settings)
    es = make_es_client(settings)
    scope = f"t{uuid.uuid4().hex[:8]}/"
    try:
        ids = [f"{id_prefix}p{n:02d}" for n in range(20)]
        await _rows_and_docs(app_pool, consumer_pool, es, physical, projector, ids)
        await es.indices.refresh(index=physical)
        state = MysqlWheelState(consumer_pool, scope=scope)
        epochs = []
        for m in (3, 5, 3):
            wheel, outbox = _wheel(consumer_pool, es, settings.alias, id_prefix, scope, m=m)
            report = await wheel.rotation()
            epoch = report.epochs["wiki_page"]
            epochs.append((epoch.epoch, epoch.bucket_count))
            assert report.new_epochs == ["wiki_page"] and report.interrupted == 0
            assert len(report.buckets) == m
            assert sum(report.counts().values()) == 0, report.counts()
            assert outbox.events == []
            assert sum(b.rows for b in report.buckets) == 20 == sum(b.docs for b in report.buckets)
        assert epochs == [(1, 3), (2, 5), (3, 3)]
        # the same M again is the same epoch; status shows the epoch and every bucket fresh
        wheel, _ = _wheel(consumer_pool, es, settings.alias, id_prefix, scope, m=3)
        same = await wheel.rotation()
        assert same.new_epochs == [] and same.epochs["wiki_page"].epoch == 3
        section = repair_section(await snapshot(state, ["wiki_page"]), max_staleness_s=3600)
        [shown] = section.data["wheels"]
        assert (shown["epoch"], shown["bucket_count"], shown["buckets_complete"]) == (3, 3, 3)
        assert section.warnings == ()
    finally:
        with contextlib.suppress(Exception):
            await es.close()
        await drop_indices(settings)


async def test_the_lag_guard_reads_the_live_groups_lag_on_kafka_and_stops_the_rotation(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> None:
    from searchsync.config import load_settings
    from searchsync.kafka.admin import ConfluentKafkaAdmin
    from searchsync.ops.repair.load import live_lag
    from searchsync.ops.repair.wheel import limits

    env = harness_env("rl", SEARCHSYNC_REPAIR_MAX_LIVE_LAG="1", SEARCHSYNC_REPAIR_LAG_POLL_S="0.2")
    settings = load_settings({**env, "SEARCHSYNC_REPAIR_LAG_WAIT_TIMEOUT_S": "1"})
    admin = ConfluentKafkaAdmin(settings.kafka.client_config())
    topic = "outbox.event.wiki_page"
    writer = PageWriter(app_pool)  # the topic holds at least these two events
    for n in range(2):
        await writer.create(f"{id_prefix}lag{n}", "t", "c", {})

    async def two_events() -> bool:
        return sum(m.high - m.low for m in admin.watermarks(topic).values()) >= 2

    await wait_for(two_events, 60, "two events on the outbox topic")
    marks = admin.watermarks(topic)
    # the group (no member) committed at the start of the topic: its lag is the whole topic
    assert (
        admin.alter_committed(
            settings.kafka.group_id, {(topic, p): m.low for p, m in marks.items()}
        )
        == {}
    )
    lag = await asyncio.to_thread(live_lag, admin, settings)
    assert lag >= sum(m.high - m.low for m in marks.values())
    bounds = limits(settings, admin)
    es = make_es_client(settings)
    wheel = Wheel(
        projectors=[default_registry().get("wiki_page")],
        alias_for=settings.alias,
        truth=MysqlTruth(consumer_pool, id_prefix=id_prefix),
        index=_CutIndexSide(es, cut_at=1),  # never reached
        state=MysqlWheelState(consumer_pool, scope=f"t{uuid.uuid4().hex[:8]}/"),
        healer=Healer(FakeOutbox(), appends_per_s=1_000, guard=bounds.lag),
        settings=RepairSettings(bucket_count=2),
        limits=bounds,
    )
    try:
        report = await wheel.rotation()
    finally:
        await es.close()
    assert report.buckets == [] and report.stopped is not None
    assert f"live group {settings.kafka.group_id!r}" in report.stopped
    assert admin.delete_group(settings.kafka.group_id)
