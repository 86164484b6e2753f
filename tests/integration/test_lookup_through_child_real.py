"""A lookup through a child table read by `MysqlTruth` on MariaDB (scratch tables of
tests/catalog.py under a fresh prefix): each product's category rows reach ``build`` on each of
its link rows, the documents are byte-identical to the fake truth's over the same rows, and a
batch costs one query per table (products, links, categories), whether read by id or by scan.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import aiomysql
import pytest
import pytest_asyncio
from searchsync.mysql.pool import transaction
from searchsync.mysql.truth import MysqlTruth

from tests import catalog
from tests.fakes.truth import FakeTruth
from tests.integration import conftest_mysql as fx
from tests.integration.conftest_mysql import MysqlTarget
from tests.integration.scratch_tables import scratch_tables

mysql_target = fx.mysql_target
app_pool = fx.app_pool

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def prefix(mysql_target: MysqlTarget) -> AsyncIterator[str]:
    name = f"it{uuid.uuid4().hex[:10]}"
    async with scratch_tables(mysql_target, catalog.tables(name), catalog.ddl(name)):
        yield name


async def test_a_batch_reads_each_table_once_and_projects_as_the_fake_truth(
    app_pool: aiomysql.Pool, mysql_target: MysqlTarget, prefix: str
) -> None:
    """40 products, each with 0-3 links to 5 categories (one link to a category that does not
    exist, some products listing a category twice), read on a one-connection pool."""
    product, link, category = catalog.tables(prefix)
    fake = FakeTruth()
    ids = [f"p{n:02}" for n in range(40)]
    names = {f"c{n}": f"名前 {n}" for n in range(5)}
    links = [(pid, f"c{(n * k) % 6}", k) for n, pid in enumerate(ids) for k in range(n % 4)]
    async with transaction(app_pool) as conn, conn.cursor() as cur:
        for cid, name in names.items():
            await cur.execute(
                f"INSERT INTO {category} (id, name, revision, updated_at)"
                " VALUES (%s, %s, 1, UTC_TIMESTAMP(6))",
                (cid, name),
            )
            fake.put({"id": cid, "name": name, "revision": 1}, table=category)
        for pid in ids:
            await cur.execute(
                f"INSERT INTO {product} (id, title, revision, updated_at)"
                " VALUES (%s, %s, 3, UTC_TIMESTAMP(6))",
                (pid, f"title {pid}"),
            )
            row = {"id": pid, "title": f"title {pid}", "revision": 3, "deleted_at": None}
            fake.put(row, table=product)
        for pid, cid, position in links:
            await cur.execute(
                f"INSERT INTO {link} (product_id, category_id, position) VALUES (%s, %s, %s)",
                (pid, cid, position),
            )
            link_row = {"product_id": pid, "category_id": cid, "position": position}
            fake.put_child(link_row, table=link)
    p = catalog.projector(prefix)
    pool = await aiomysql.create_pool(
        host=mysql_target.host,
        port=mysql_target.port,
        user=mysql_target.consumer_user,
        password=mysql_target.consumer_password,
        db=mysql_target.database,
        minsize=1,
        maxsize=1,
    )
    try:
        truth = MysqlTruth(pool)

        async def selects() -> int:
            async with pool.acquire() as conn, conn.cursor() as cur:
                await cur.execute("SHOW SESSION STATUS LIKE 'Com_select'")
                (_, value) = await cur.fetchone()
            return int(value)

        await truth.rows_by_id(p, ids)  # learns whether the link table reads packed
        before = await selects()
        by_id = await truth.rows_by_id(p, ids)
        after_by_id = await selects()
        page = await truth.scan(p, None, 100)
        after_scan = await selects()
    finally:
        pool.close()
        await pool.wait_closed()
    assert (after_by_id - before, after_scan - after_by_id) == (3, 3)
    want = await fake.rows_by_id(p, ids)
    assert [r["id"] for r in page] == ids
    for row in page:
        assert p.project(row).encoded == p.project(want[row["id"]]).encoded
        assert p.project(by_id[row["id"]]).encoded == p.project(want[row["id"]]).encoded
    shown = p.project(by_id["p11"]).body["categories"]  # links c0, c5 (none such), c4
    assert shown == ["名前 0", "[c5]", "名前 4"]
    assert p.project(by_id["p03"]).body["categories"] == ["名前 0", "名前 3", "名前 0"]
    assert p.project(by_id["p00"]).body["categories"] == []
