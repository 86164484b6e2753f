"""The read side on the real stack (MariaDB -> Debezium -> Kafka -> consumer -> Elasticsearch),
with concurrent writers: read-your-writes waits (``searchsync wait`` included) and
`verified_search` while the very rows it returns change and go away."""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator

import aiomysql
import orjson
import pytest
import pytest_asyncio
from searchsync.devtools.loadgen import LoadgenReport, run_loadgen
from searchsync.mysql.truth import MysqlTruth
from searchsync.naming import read_alias_name
from searchsync.projection import default_registry
from searchsync.read import (
    Freshness,
    ReadMetrics,
    Until,
    WaitResult,
    verified_search,
    wait_for_revision,
    wait_for_revision_sync,
)
from searchsync.search.client import make_es_client
from searchsync.search.es_index import EsIndex
from searchsync.writer import PageWriter

from tests.integration.consumer_harness import (
    REPO,
    InProcessConsumer,
    drop_indices,
    harness_env,
    prepare_index,
)
from tests.integration.engines import ENGINES, opensearch_env

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

PROJECTOR = default_registry().get("wiki_page")


@pytest_asyncio.fixture(loop_scope="session")
async def live(request: pytest.FixtureRequest) -> AsyncIterator[InProcessConsumer]:
    """The consumer on Elasticsearch; a test parametrized with ``opensearch`` gets it there."""
    on_engine = opensearch_env() if getattr(request, "param", "") == "opensearch" else {}
    consumer = InProcessConsumer(harness_env("rs", **on_engine))
    await prepare_index(consumer.settings)
    await consumer.start()
    try:
        yield consumer
    finally:
        await consumer.close()
        await drop_indices(consumer.settings)


def background_load(writer: PageWriter, prefix: str) -> asyncio.Task[LoadgenReport]:
    """Other writers on other pages, while a test waits for its own."""
    return asyncio.create_task(
        run_loadgen(
            writer,
            pages=60,
            updates=400,
            concurrency=4,
            delete_ratio=0.15,
            hard_delete_ratio=0.1,
            seed=23,
            id_prefix=f"{prefix}-load",
        )
    )


async def cli(env: dict[str, str], *args: str) -> tuple[int | None, bytes, bytes]:
    """``searchsync ARGS`` in a child process: its exit code, stdout and stderr."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "searchsync",
        *args,
        env=env,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(child.communicate(), 60)
    return child.returncode, out, err


@pytest.mark.parametrize("live", ENGINES, indirect=True)
async def test_read_your_writes_under_load(
    live: InProcessConsumer, app_pool: aiomysql.Pool
) -> None:
    settings, prefix = live.settings, f"ryw-{uuid.uuid4().hex[:8]}"
    alias = settings.alias("wiki_page")
    writer = PageWriter(app_pool)
    es = make_es_client(settings)
    reader = EsIndex(es)

    async def wait(doc_id: str, revision: int, until: Until, timeout_s: float = 60) -> WaitResult:
        return await wait_for_revision(
            reader, alias, doc_id, revision, until=until, timeout_s=timeout_s
        )

    async def on_read_alias(doc_id: str) -> list[int]:
        hits = await reader.search(read_alias_name(alias), {"ids": {"values": [doc_id]}}, size=1)
        return [h.version for h in hits]

    load = background_load(writer, prefix)
    lags: list[float] = []
    try:
        for n in range(12):
            doc_id = f"{prefix}-{n}"
            committed = time.monotonic()
            revision = await writer.create(doc_id, f"page {n}", "内容", {})
            got = await wait(doc_id, revision, Until.SEARCHABLE)
            lags.append(time.monotonic() - committed)
            assert got.reached and got.seen == revision and got.deleted is False, got.message
            assert await on_read_alias(doc_id) == [revision]  # readers see it now
            indexed = await wait(doc_id, revision, Until.INDEXED, timeout_s=0)
            assert indexed.reached and indexed.seen == revision

        # a delete is searchable when its tombstone is; the read alias then hides the document
        for n, delete in ((0, writer.soft_delete), (1, writer.hard_delete)):
            doc_id = f"{prefix}-{n}"
            revision = await delete(doc_id)
            got = await wait(doc_id, revision, Until.SEARCHABLE)
            assert got.reached and (got.seen, got.deleted) == (revision, True), got.message
            assert await on_read_alias(doc_id) == []

        # superseded while waiting: the wait for r1 starts, r2 and r3 are committed meanwhile
        doc_id = f"{prefix}-2"
        r1 = await writer.update(doc_id, content="r1")
        waiting = asyncio.create_task(wait(doc_id, r1, Until.SEARCHABLE))
        r2 = await writer.update(doc_id, content="r2")
        r3 = await writer.update(doc_id, content="r3")
        got = await waiting
        assert got.reached and got.seen is not None and got.seen >= r1, got.message
        assert (await wait(doc_id, r3, Until.INDEXED)).reached
        got = await wait(doc_id, r1, Until.INDEXED, timeout_s=0)  # a higher revision counts
        assert got.reached and got.seen == r3 > r2 > r1

        # the blocking form, for an application without an event loop
        blocking = await asyncio.to_thread(
            wait_for_revision_sync, settings, "wiki_page", doc_id, r3, until=Until.SEARCHABLE
        )
        assert blocking.reached and blocking.seen == r3, blocking.message

        # a revision never written: a bounded wait that says what it saw
        started = time.monotonic()
        got = await wait(doc_id, r3 + 5, Until.SEARCHABLE, timeout_s=1.5)
        assert not got.reached and 1.5 <= time.monotonic() - started < 5
        assert f"saw revision {r3}" in got.message

        # the CLI: exit 0 when reached, 1 (saying what it saw) when it timed out
        env = {**os.environ, **harness_env("rs")}
        env["SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX"] = settings.elasticsearch.index_prefix
        env["SEARCHSYNC_ELASTICSEARCH_HOSTS"] = ",".join(settings.elasticsearch.hosts)
        env["SEARCHSYNC_SEARCH_ENGINE"] = settings.search.engine
        argv = ["wait", "--id", doc_id, "--json"]
        code, out, err = await cli(env, *argv, "--revision", str(r3), "--searchable")
        assert code == 0, err
        shown = orjson.loads(out)
        assert (shown["reached"], shown["until"], shown["seen_revision"]) == (
            True,
            "searchable",
            r3,
        )
        code, out, err = await cli(env, *argv, "--revision", str(r3 + 1), "--timeout", "0.5")
        assert code == 1, err
        assert orjson.loads(out)["seen_revision"] == r3
        report = await load
        assert report.changes > 0
    finally:
        load.cancel()
        await es.close()
    lags.sort()
    print(
        f"commit -> searchable under load: median {lags[len(lags) // 2]:.3f}s max {lags[-1]:.3f}s"
    )


async def test_verified_search_while_writers_change_and_delete_its_rows(
    live: InProcessConsumer, app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    settings, prefix = live.settings, f"vs-{uuid.uuid4().hex[:8]}"
    alias = settings.alias("wiki_page")
    token = f"tok{uuid.uuid4().hex[:10]}"
    writer = PageWriter(app_pool)
    es = make_es_client(settings)
    reader, truth, metrics = EsIndex(es), MysqlTruth(consumer_pool), ReadMetrics()
    ids = [f"{prefix}-{n:02d}" for n in range(30)]
    last = {}
    for doc_id in ids:
        last[doc_id] = await writer.create(doc_id, f"{token} {doc_id}", "正文", {})
    for doc_id in ids:
        got = await wait_for_revision(
            reader, alias, doc_id, last[doc_id], until=Until.SEARCHABLE, timeout_s=60
        )
        assert got.reached, got.message

    async def search() -> list[tuple[str, int, Freshness]]:
        result = await verified_search(
            reader,
            truth,
            PROJECTOR,
            alias=alias,
            query={"match": {"title": token}},
            query_type="it_admin_list",
            size=100,
            replace_stale=True,
            metrics=metrics,
        )
        assert result.fresh + result.stale == len(result.hits)
        for hit in result.hits:  # what the caller shows: never a tombstone, never behind the row
            assert hit.source["is_deleted"] is False
            assert hit.source["source_revision"] == hit.row_revision
            assert hit.freshness is (
                Freshness.FRESH if hit.indexed_revision == hit.row_revision else Freshness.STALE
            )
        return [(h.doc_id, h.row_revision, h.freshness) for h in result.hits]

    churn_stop = asyncio.Event()

    async def churn() -> None:  # other writers keep changing the rows the query returns
        n = 0
        while not churn_stop.is_set():
            doc_id = ids[20 + n % 10]
            await writer.update(doc_id, content=f"churn {n}")
            n += 1
            await asyncio.sleep(0.01)

    churner = asyncio.create_task(churn())
    try:
        deleted: set[str] = set()
        for step in range(10):
            # committed just before the search: the index cannot have it yet
            gone_now = ids[2 * step]
            await (writer.hard_delete if step % 2 else writer.soft_delete)(gone_now)
            deleted.add(gone_now)
            changed = ids[2 * step + 1]
            last[changed] = await writer.update(changed, content=f"step {step}")
            seen = await search()
            assert deleted.isdisjoint(doc_id for doc_id, _, _ in seen)
            mine = {doc_id: revision for doc_id, revision, _ in seen}
            assert mine.get(changed) == last[changed]  # the truth, stale or not
    finally:
        churn_stop.set()
        await churner
        await es.close()
    text = metrics.registry.get_sample_value
    gone = text(
        "searchsync_verified_search_drift_hits_total",
        {"query_type": "it_admin_list", "state": "gone"},
    )
    stale = text(
        "searchsync_verified_search_drift_hits_total",
        {"query_type": "it_admin_list", "state": "stale"},
    )
    assert gone is not None and gone >= 1
    assert stale is not None and stale >= 1
