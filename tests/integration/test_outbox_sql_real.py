"""docs/outbox.md's SQL, run verbatim on the real stack: each fenced ``sql`` block of the page
(create, update, soft delete, hard delete) on a fresh wiki_page id, through MariaDB, Debezium and
Kafka to searchsync, and the document in Elasticsearch after each one."""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path
from typing import Any

import pymysql
import pytest
from elasticsearch import NotFoundError
from pymysql.constants import CLIENT
from searchsync.search.client import make_es_client

from tests.integration.conftest_mysql import MysqlTarget
from tests.integration.consumer_harness import (
    InProcessConsumer,
    drop_indices,
    harness_env,
    prepare_index,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

DOC = Path(__file__).resolve().parents[2] / "docs" / "outbox.md"
_BLOCK = re.compile(r"^```sql\n(.*?)^```", re.MULTILINE | re.DOTALL)


def documented_blocks() -> dict[str, str]:
    """The page's ``sql`` blocks by the name their first line gives (``-- create: ...``)."""
    blocks: dict[str, str] = {}
    for body in _BLOCK.findall(DOC.read_text(encoding="utf-8")):
        first = body.splitlines()[0]
        assert first.startswith("-- ") and ":" in first, f"an sql block without a name: {first}"
        blocks[first[3:].partition(":")[0]] = body
    return blocks


def run_verbatim(target: MysqlTarget, aggregate_id: str, block: str) -> None:
    """`block` as the page shows it, in one session of the application user where ``@id`` is
    `aggregate_id`; every statement's result is read, so a failing one raises."""
    conn = pymysql.connect(
        host=target.host,
        port=target.port,
        user=target.app_user,
        password=target.app_password,
        database=target.database,
        autocommit=True,  # the block says START TRANSACTION and COMMIT itself
        charset="utf8mb4",
        client_flag=CLIENT.MULTI_STATEMENTS,
    )
    try:
        with conn.cursor() as cur:
            cur.execute("SET @id = %s", (aggregate_id,))
            cur.execute(block)
            while cur.nextset():
                pass
    finally:
        conn.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestWarning")
def test_the_page_documents_each_kind_of_change() -> None:
    assert list(documented_blocks()) == ["create", "update", "soft delete", "hard delete"]


async def test_the_documented_sql_reaches_elasticsearch(mysql_target: MysqlTarget) -> None:
    blocks = documented_blocks()
    consumer = InProcessConsumer(harness_env("osql"))
    settings = consumer.settings
    await prepare_index(settings)
    await consumer.start()
    es = make_es_client(settings)
    alias = settings.alias("wiki_page")
    page = f"osql-{uuid.uuid4().hex[:12]}"
    try:

        async def at(revision: int) -> dict[str, Any]:
            found: dict[str, Any] = {}

            async def check() -> bool:
                try:
                    got: Any = await es.get(index=alias, id=page)
                except NotFoundError:
                    return False
                found.clear()
                found.update(got["_source"])
                return int(got["_version"]) == revision

            await wait_for(check, 60, f"{page} at revision {revision} in {alias}")
            return found

        steps = [
            ("create", 1, {"title": "Outbox from SQL", "is_deleted": False}),
            ("update", 2, {"title": "Outbox from SQL, edited", "is_deleted": False}),
            ("soft delete", 3, {"is_deleted": True}),
            ("hard delete", 4, {"is_deleted": True}),
        ]
        for name, revision, fields in steps:
            await asyncio.to_thread(run_verbatim, mysql_target, page, blocks[name])
            source = await at(revision)
            assert source["source_revision"] == revision, name
            assert {k: source.get(k) for k in fields} == fields, name
        assert "title" not in source  # a hard-delete tombstone holds no content
    finally:
        await es.close()
        code = await consumer.close()
        await drop_indices(settings)
    assert code == 0
