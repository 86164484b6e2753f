"""`searchsync rebuild` on the real stack: under concurrent writers with a live consumer on the
alias, and killed mid-backfill then resumed.

The wiki_page table and the outbox topic are shared with every other test, so the rebuild scans
rows and replays events that are not this test's; the assertions look only at this test's ids,
alias and groups. The count and sample tolerances are loosened for the same reason: other
tests write (and leave unprojectable rows) while the rebuild verifies.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import uuid
from typing import Any

import aiomysql
import orjson
import pytest
from elasticsearch import AsyncElasticsearch
from searchsync.cli.reconcile import run_rebuild
from searchsync.config import Settings, load_settings
from searchsync.devtools.loadgen import run_loadgen
from searchsync.mysql.truth import MysqlTruth
from searchsync.naming import read_alias_name
from searchsync.ops.rebuild.plan import RebuildOptions
from searchsync.ops.rebuild.records import MysqlRebuildState, Status
from searchsync.runtime import Runtime
from searchsync.search.client import make_es_client
from searchsync.writer import PageWriter

from tests.integration.conftest_mysql import fetch_all
from tests.integration.consumer_harness import (
    REBUILD_ON_SHARED_TABLE,
    REPO,
    InProcessConsumer,
    converged,
    expected_documents,
    harness_env,
    prepare_index,
    wait_for,
)
from tests.integration.engines import ENGINES, opensearch_env

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


async def _floors(pool: aiomysql.Pool, ids: list[str]) -> dict[str, int]:
    rows = await fetch_all(
        pool,
        "SELECT aggregate_id, revision FROM search_revision_floor WHERE aggregate_type ="
        " 'wiki_page' AND aggregate_id IN (" + ",".join(["%s"] * len(ids)) + ")",
        tuple(ids),
    )
    return {r["aggregate_id"]: int(r["revision"]) for r in rows}


async def _wait_all_equal(
    es: AsyncElasticsearch, index: str, pool: aiomysql.Pool, ids: list[str], deadline_s: float
) -> None:
    last = [""]

    async def check() -> bool:
        expected = await expected_documents(MysqlTruth(pool), ids, await _floors(pool, ids))
        ok, why = await converged(es, index, expected)
        last[0] = why
        return ok

    try:
        await wait_for(check, deadline_s, f"every document of {index} equals its row's projection")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last difference: {last[0]}") from None


async def _drop(es: AsyncElasticsearch, alias: str) -> None:
    with contextlib.suppress(Exception):
        await es.indices.delete(index=f"{alias}_v*")


@pytest.mark.parametrize("engine", ENGINES)
async def test_rebuild_under_load_swaps_without_failed_searches(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, engine: str
) -> None:
    prefix = f"rb-{uuid.uuid4().hex[:8]}"
    ids_first = [f"{prefix}-a{i:04d}" for i in range(60)]
    env = harness_env(
        "rb", SEARCHSYNC_REBUILD_QUERIES=",".join(ids_first[:20]), **REBUILD_ON_SHARED_TABLE
    )
    if engine == "opensearch":
        env |= opensearch_env()
    env["SEARCHSYNC_REBUILD_MAX_QUERY_DIFF_RATE"] = "0.5"  # writers may still change titles
    live = InProcessConsumer(env)
    settings = live.settings
    alias = settings.alias("wiki_page")
    await prepare_index(settings)
    await live.start()
    es = make_es_client(settings)
    writer = PageWriter(app_pool)
    stop_search = asyncio.Event()
    answers: list[int] = []
    failures: list[str] = []
    read = read_alias_name(alias)
    shown_tombstones: list[str] = []  # tombstones a search of the read alias returned

    async def read_alias_shows_no_tombstone() -> None:
        resp = await es.search(index=read, query={"term": {"is_deleted": True}}, size=5)
        shown_tombstones.extend(hit["_id"] for hit in resp["hits"]["hits"])

    try:
        for page_id in ids_first:
            await writer.create(page_id, f"first {page_id}", "before the rebuild", {})
        for page_id in ids_first[30:35]:
            await writer.soft_delete(page_id)
        await _wait_all_equal(es, alias, consumer_pool, ids_first, 120)
        await es.indices.refresh(index=alias)  # before: the tombstones are searchable...
        before = await es.count(index=alias, query={"term": {"is_deleted": True}})
        assert before["count"] >= 5
        await read_alias_shows_no_tombstone()  # ...through the write alias only

        async def search_forever() -> None:
            while not stop_search.is_set():
                try:
                    resp = await es.search(index=alias, query={"match_all": {}}, size=1)
                    answers.append(resp.meta.status)
                    await read_alias_shows_no_tombstone()
                except Exception as exc:  # any failure is what the test forbids
                    failures.append(repr(exc))
                await asyncio.sleep(0.02)

        async def hot_key() -> None:
            hot = ids_first[0]
            for i in range(40):
                await writer.update(hot, content=f"hot {i}")

        async def deletes() -> None:
            for page_id in ids_first[40:50]:
                await writer.soft_delete(page_id)
            for page_id in ids_first[50:]:
                await writer.hard_delete(page_id)

        load = asyncio.gather(
            run_loadgen(
                writer,
                pages=80,
                updates=240,
                concurrency=4,
                delete_ratio=0.15,
                hard_delete_ratio=0.1,
                seed=7,
                id_prefix=f"{prefix}-b",
            ),
            hot_key(),
            deletes(),
        )
        searcher = asyncio.create_task(search_forever())
        outcome = await run_rebuild(Runtime(settings), RebuildOptions("wiki_page"), json_lines=True)
        report, _, _ = await load
        stop_search.set()
        await searcher

        assert outcome.ok, outcome.message
        assert outcome.record is not None and outcome.record.status is Status.DONE
        new = f"{alias}_v2"
        writes_to = await es.indices.get_alias(name=alias)
        assert list(writes_to.body) == [new]
        assert list((await es.indices.get_alias(name=read)).body) == [new]
        assert failures == [], failures[:3]
        assert answers and set(answers) == {200}
        # the live group now writes v2 through the alias: every document converges there
        ids = sorted(set(ids_first) | set(report.final_revisions))
        await _wait_all_equal(es, new, consumer_pool, ids, 180)
        # invariant 15: the index holds tombstones, a search of the read alias never showed one
        await es.indices.refresh(index=new)
        tombstones = await es.count(index=alias, query={"term": {"is_deleted": True}})
        assert tombstones["count"] >= 20
        await read_alias_shows_no_tombstone()
        assert shown_tombstones == []
        meta = (await es.indices.get_mapping(index=new))[new]["mappings"]["_meta"]
        assert meta["created_by_rebuild"] is True and meta["projection_schema_version"] == 2
        settings_now = (await es.indices.get_settings(index=new))[new]["settings"]["index"]
        assert settings_now.get("refresh_interval", "1s") != "-1"
        group = outcome.record.catchup_group
        assert group == f"{settings.kafka.group_id}.rebuild.v2"
    finally:
        stop_search.set()
        await live.close()
        await _drop(es, alias)
        await es.close()


def _cli(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "searchsync", "rebuild", "--json", *args],
        cwd=REPO,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _events(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in data.splitlines() if line.startswith(b"{")]


async def test_a_rebuild_killed_mid_backfill_resumes_and_finishes(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    prefix = f"rbk-{uuid.uuid4().hex[:8]}"
    ids = [f"{prefix}-{i:04d}" for i in range(40)]
    env = harness_env(
        "rbk",
        SEARCHSYNC_REBUILD_CHUNK_INITIAL="50",
        SEARCHSYNC_REBUILD_CHUNK_MIN="50",
        SEARCHSYNC_REBUILD_CHUNK_MAX="50",
        SEARCHSYNC_REBUILD_MAX_QUERY_DIFF_RATE="1",  # no live group keeps v1 current here
        **REBUILD_ON_SHARED_TABLE,
    )
    settings: Settings = load_settings(env)
    alias = settings.alias("wiki_page")
    await prepare_index(settings)
    writer = PageWriter(app_pool)
    for page_id in ids:
        await writer.create(page_id, f"resume {page_id}", "x", {})
    es = make_es_client(settings)
    state = MysqlRebuildState(consumer_pool)
    try:
        first = _cli(env)
        assert first.stdout is not None
        seen = 0
        while seen < 2:  # kill -9 after the second chunk was saved
            line = await asyncio.to_thread(first.stdout.readline)
            assert line, f"the rebuild ended early: {first.communicate()[1].decode()[-2000:]}"
            if orjson.loads(line).get("event") == "backfill":
                seen += 1
        first.kill()
        first.wait(30)
        saved = await state.unfinished(alias)
        assert saved is not None and saved.status is Status.BACKFILLING
        assert saved.last_id is not None and saved.rows_done >= 100

        # changes after the kill: the resumed rebuild's catch-up replays them from the watermark
        for page_id in ids[:10]:
            await writer.update(page_id, content="after the kill")
        for page_id in ids[10:15]:
            await writer.hard_delete(page_id)

        refused = _cli(env)
        _, err = await asyncio.to_thread(refused.communicate)
        assert refused.returncode == 1
        assert b"--resume" in err and b"--abandon" in err

        resumed = _cli(env, "--resume")
        out, err = await asyncio.to_thread(resumed.communicate, None, 300)
        assert resumed.returncode == 0, err.decode()[-3000:]
        events = _events(out)
        backfills = [e for e in events if e.get("event") == "backfill"]
        assert backfills and backfills[0]["rows_done"] > saved.rows_done  # no start over
        summary = events[-1]
        assert summary["ok"] is True
        assert summary["rebuild"]["rebuild_id"] == saved.rebuild_id
        assert summary["rebuild"]["target_index"] == saved.target_index == f"{alias}_v2"
        assert summary["rebuild"]["status"] == "done"
        assert await state.unfinished(alias) is None
        await _wait_all_equal(es, f"{alias}_v2", consumer_pool, ids, 60)
        assert list((await es.indices.get_alias(name=alias)).body) == [f"{alias}_v2"]
    finally:
        await _drop(es, alias)
        await es.close()


async def test_dry_run_on_the_real_stack_changes_nothing() -> None:
    # the empty index lacks the shared table's rows: loose limits, or the plan says "refused"
    env = harness_env("rbd", **REBUILD_ON_SHARED_TABLE)
    settings = load_settings(env)
    alias = settings.alias("wiki_page")
    await prepare_index(settings)
    es = make_es_client(settings)
    try:
        proc = _cli(env, "--dry-run")
        out, err = await asyncio.to_thread(proc.communicate, None, 120)
        assert proc.returncode == 0, err.decode()
        plan = _events(out)[-1]["plan"]
        assert plan["current_index"] == f"{alias}_v1" and plan["new_index"] == f"{alias}_v2"
        assert plan["rows"] > 0 and plan["watermark"]
        assert not await es.indices.exists(index=f"{alias}_v2")
    finally:
        await _drop(es, alias)
        await es.close()
