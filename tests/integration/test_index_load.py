"""`searchsync index load` on the real stack: rows that exist before searchsync (inserted with plain
SQL, no outbox event) are loaded while the live group runs and the application changes some of
them; at the end every document equals the projection of its row (0 divergent). The same load in
two parts from two processes, and one killed with SIGKILL and resumed, end the same way; a second
load does nothing.

The wiki_page table is shared with other tests: each load is limited to this test's ids with
``--where "id LIKE '<prefix>%'"``, and writes into this test's own alias (harness prefix)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import aiomysql
import orjson
import pytest
from elasticsearch import AsyncElasticsearch
from searchsync.mysql.pool import transaction
from searchsync.mysql.truth import MysqlTruth
from searchsync.search.client import make_es_client
from searchsync.writer import PageWriter

from tests.integration.conftest_mysql import fetch_all, revision_floors
from tests.integration.consumer_harness import (
    REPO,
    InProcessConsumer,
    divergent,
    drop_indices,
    expected_documents,
    harness_env,
    prepare_index,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

ROWS = 20_000
"""Rows that exist before searchsync in the first test (the others use fewer: their point is
the split and the resume, not the volume)."""
_INSERT_BATCH = 1_000


async def _insert_existing(pool: aiomysql.Pool, prefix: str, n: int) -> list[str]:
    """`n` wiki_page rows written the way an application did before searchsync: plain SQL, no
    outbox row; revisions 1..3, every tenth soft-deleted, relations on some."""
    ids = [f"{prefix}{i:06d}" for i in range(n)]
    now = datetime.now(UTC).replace(tzinfo=None)
    relations = orjson.dumps(
        {"RELATED_CHARACTER": [{"entity_id": "c1", "entity_type": "character", "title": "齐夏"}]}
    ).decode()
    sql = (
        "INSERT INTO wiki_page (id, title, content, relations_json, revision, deleted_at,"
        " updated_at) VALUES "
    )
    for start in range(0, n, _INSERT_BATCH):
        chunk = ids[start : start + _INSERT_BATCH]
        args: list[Any] = []
        for k, page_id in enumerate(chunk, start=start):
            deleted = now if k % 10 == 0 else None
            args += [page_id, f"page {k}", f"content {k}", relations if k % 3 else "{}"]
            args += [1 + k % 3, deleted, now]
        async with transaction(pool) as conn, conn.cursor() as cur:
            await cur.execute(sql + ", ".join(["(%s, %s, %s, %s, %s, %s, %s)"] * len(chunk)), args)
    return ids


async def _live_writes(
    pool: aiomysql.Pool, ids: list[str], prefix: str, touched: set[str], *, rows_stay: bool = False
) -> list[str]:
    """The application's changes meanwhile, through its writer (each with an outbox event):
    updates, soft and hard deletes of existing rows, and new rows; the new ids. Every id it
    changes goes to `touched`. With `rows_stay`, updates and soft deletes only: the set of rows
    does not change."""
    writer = PageWriter(pool)
    new = [] if rows_stay else [f"{prefix}n{i:03d}" for i in range(20)]
    step = max(1, len(ids) // 200)
    picked = ids[1::step]
    touched.update(picked, new)
    for n, page_id in enumerate(picked):
        if n % 10 == 9 and not rows_stay:
            await writer.hard_delete(page_id)
        elif n % 10 == 8:
            await writer.soft_delete(page_id)
        else:
            await writer.update(page_id, content=f"changed {n}")
        if n < len(new):
            await writer.create(new[n], f"new {n}", "created meanwhile", {})
    return new


async def _assert_converged(
    es: AsyncElasticsearch, alias: str, pool: aiomysql.Pool, ids: list[str]
) -> None:
    """Wait until every document equals the projection of its row (or its tombstone)."""
    truth = MysqlTruth(pool)
    last: list[str] = []

    async def check() -> bool:
        expected = await expected_documents(truth, ids, await revision_floors(pool, ids))
        last[:] = await divergent(es, alias, expected)
        return not last

    try:
        await wait_for(check, 60, "every document equals its row's projection", 0.5)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {len(last)} divergent, e.g. {last[:5]}") from None


async def _forget_untouched(pool: aiomysql.Pool, prefix: str, touched: set[str]) -> None:
    """Delete this test's rows that never had an outbox event (no index that follows the topic
    knows them), so the shared table does not grow by every run; the changed ones stay, as other
    tests leave theirs."""
    keep = sorted(touched) or [""]
    async with transaction(pool) as conn, conn.cursor() as cur:
        await cur.execute(
            "DELETE FROM wiki_page WHERE id LIKE %s AND id NOT IN ("
            + ", ".join(["%s"] * len(keep))
            + ")",
            (f"{prefix}%", *keep),
        )


def _cli(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "searchsync",
            "index",
            "load",
            "--type",
            "wiki_page",
            "--json",
            *args,
        ],
        cwd=REPO,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


async def _finished(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    out, errors = await asyncio.to_thread(proc.communicate, None, 120)
    assert proc.returncode == 0, errors.decode()[-2000:]
    summary: dict[str, Any] = orjson.loads(out)
    return summary


async def _state(pool: aiomysql.Pool, alias: str) -> list[dict[str, Any]]:
    return await fetch_all(
        pool,
        "SELECT part, parts, status, last_id, rows_done, chunks_done, runs"
        " FROM search_load_state WHERE alias_name = %s ORDER BY part",
        (alias,),
    )


async def test_a_load_under_live_writes_ends_with_every_document_equal_to_its_row(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    prefix = f"ld{uuid.uuid4().hex[:8]}-"
    env = harness_env("ld")
    live = InProcessConsumer(env)
    alias = live.settings.alias("wiki_page")
    touched: set[str] = set()
    t0 = time.monotonic()
    ids = await _insert_existing(app_pool, prefix, ROWS)
    await prepare_index(live.settings)
    await live.start()
    es = make_es_client(live.settings)
    try:
        loaded = time.monotonic()
        proc = _cli(env, "--where", f"id LIKE '{prefix}%'")
        new, summary = await asyncio.gather(
            _live_writes(app_pool, ids, prefix, touched), _finished(proc)
        )
        took = time.monotonic() - loaded
        assert summary["action"] == "done" and summary["ok"], summary["message"]
        assert summary["load"]["rows_done"] > 0 and summary["load"]["rows_failed"] == 0
        await _assert_converged(es, alias, consumer_pool, ids + new)
        again = await _finished(_cli(env, "--where", f"id LIKE '{prefix}%'"))
        assert again["action"] == "already_done" and again["rows_this_run"] == 0
        print(f"loaded {ROWS} rows in {took:.1f}s; test {time.monotonic() - t0:.1f}s")
    finally:
        await live.close()
        await drop_indices(live.settings)
        await es.close()
        await _forget_untouched(app_pool, prefix, touched)


async def test_two_parts_in_two_processes_load_the_same_rows_once(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    prefix = f"lp{uuid.uuid4().hex[:8]}-"
    env = harness_env("lp")
    live = InProcessConsumer(env)
    alias = live.settings.alias("wiki_page")
    touched: set[str] = set()
    ids = await _insert_existing(app_pool, prefix, 6_000)
    await prepare_index(live.settings)
    await live.start()
    es = make_es_client(live.settings)
    try:
        where = ("--where", f"id LIKE '{prefix}%'")
        parts = [_cli(env, *where, "--part", f"{i}/2") for i in range(2)]
        new, *summaries = await asyncio.gather(
            _live_writes(app_pool, ids, prefix, touched), *(_finished(p) for p in parts)
        )
        assert [s["action"] for s in summaries] == ["done", "done"]
        state = await _state(consumer_pool, alias)
        assert [(r["part"], r["parts"], r["status"]) for r in state] == [
            (0, 2, "done"),
            (1, 2, "done"),
        ]
        low = summaries[1]["load"]["low_id"]
        assert summaries[0]["load"]["high_id"] == low  # adjacent, disjoint ranges
        assert all(int(r["rows_done"]) > 0 for r in state)
        await _assert_converged(es, alias, consumer_pool, ids + new)
    finally:
        await live.close()
        await drop_indices(live.settings)
        await es.close()
        await _forget_untouched(app_pool, prefix, touched)


async def test_a_killed_load_resumes_after_its_last_finished_chunk(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    prefix = f"lk{uuid.uuid4().hex[:8]}-"
    env = harness_env(
        "lk",
        SEARCHSYNC_REBUILD_CHUNK_INITIAL="200",
        SEARCHSYNC_REBUILD_CHUNK_MIN="200",
        SEARCHSYNC_REBUILD_CHUNK_MAX="200",
        SEARCHSYNC_ELASTICSEARCH_BULK_MAX_ACTIONS="200",
    )
    live = InProcessConsumer(env)
    alias = live.settings.alias("wiki_page")
    touched: set[str] = set()
    ids = await _insert_existing(app_pool, prefix, 8_000)
    await prepare_index(live.settings)
    await live.start()
    es = make_es_client(live.settings)
    try:
        where = ("--where", f"id LIKE '{prefix}%'")
        proc = _cli(env, *where)

        async def a_chunk_finished() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"the load ended before it was killed: {proc.returncode}")
            return any(int(r["chunks_done"]) >= 1 for r in await _state(consumer_pool, alias))

        await wait_for(a_chunk_finished, 60, "the load's first finished chunk", 0.02)
        proc.send_signal(signal.SIGKILL)
        await asyncio.to_thread(proc.wait, 30)
        [killed] = await _state(consumer_pool, alias)
        assert killed["status"] == "loading" and 0 < int(killed["rows_done"]) < len(ids)
        writes = asyncio.create_task(_live_writes(app_pool, ids, prefix, touched, rows_stay=True))
        resumed = await _finished(_cli(env, *where))
        await writes
        assert resumed["action"] == "done" and resumed["resumed_after"] == killed["last_id"]
        # the finished rows were not read again: this run read only the rest
        assert resumed["rows_this_run"] == len(ids) - int(killed["rows_done"])
        [final] = await _state(consumer_pool, alias)
        assert int(final["rows_done"]) == len(ids) and int(final["runs"]) == 2
        again = await _finished(_cli(env, *where))
        assert again["action"] == "already_done" and again["rows_this_run"] == 0
        await _assert_converged(es, alias, consumer_pool, ids)
    finally:
        await live.close()
        await drop_indices(live.settings)
        await es.close()
        await _forget_untouched(app_pool, prefix, touched)
