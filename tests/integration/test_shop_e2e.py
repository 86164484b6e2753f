"""The shop example end to end (searchsync/examples/shop.py, schemas/sql/examples/shop.sql): a
team's own table with an integer AUTO_INCREMENT key, a DECIMAL price, a DATE, a JSON column and
a DATETIME(6), written by plain SQL only, as an application in any language would: each change is
one transaction of the row change, ``revision = revision + 1`` and the outbox row's INSERT.
Updates, a child replacement, a soft delete and its restore, inserts and a hard delete run while
two members of one group consume ``outbox.event.product``; at the end each document equals its
row field by field."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import aiomysql
import pytest
import pytest_asyncio
from elasticsearch import NotFoundError
from searchsync.mysql.truth import MysqlTruth
from searchsync.projection import Document, registry_from_settings
from searchsync.search.admin import init_index
from searchsync.search.client import make_es_client

from tests.integration.conftest_mysql import fetch_all
from tests.integration.consumer_harness import (
    InProcessConsumer,
    converged,
    harness_env,
    wait_for,
)
from tests.integration.test_aggregate_types_e2e import ensure_topics

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

TOPIC = "outbox.event.product"
MODULE = "searchsync.examples.shop"

# The outbox row of the product @id at its current revision: its thin event built in SQL.
OUTBOX_UPSERT = """
INSERT INTO search_outbox (event_id, aggregate_type, aggregate_id, operation, source_revision,
                           payload, available_at, created_at, updated_at)
SELECT @event_id, 'product', CAST(id AS CHAR), 'UPSERT', revision,
       JSON_OBJECT('event_id', @event_id, 'aggregate_type', 'product',
                   'aggregate_id', CAST(id AS CHAR), 'operation', 'UPSERT',
                   'source_revision', revision),
       UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6)
FROM product WHERE id = @id
"""
# A hard delete's outbox row, at the revision floor recorded for @id.
OUTBOX_TOMBSTONE = """
INSERT INTO search_outbox (event_id, aggregate_type, aggregate_id, operation, source_revision,
                           payload, available_at, created_at, updated_at)
SELECT @event_id, 'product', aggregate_id, 'TOMBSTONE', revision,
       JSON_OBJECT('event_id', @event_id, 'aggregate_type', 'product',
                   'aggregate_id', aggregate_id, 'operation', 'TOMBSTONE',
                   'source_revision', revision),
       UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6)
FROM search_revision_floor WHERE aggregate_type = 'product' AND aggregate_id = CAST(@id AS CHAR)
"""


async def in_transaction(
    pool: aiomysql.Pool, statements: Sequence[tuple[str, tuple[Any, ...]]]
) -> None:
    """Run `statements` in one transaction, each followed by nothing but the next."""
    async with pool.acquire() as conn:
        await conn.begin()
        try:
            async with conn.cursor() as cur:
                await cur.execute("SET @event_id = UUID()")
                for sql, args in statements:
                    await cur.execute(sql, args)
            await conn.commit()
        except BaseException:
            await conn.rollback()
            raise


def images_sql(images: Sequence[tuple[str, str | None]]) -> list[tuple[str, tuple[Any, ...]]]:
    return [
        ("INSERT INTO product_image (product_id, position, url, alt) VALUES (@id, %s, %s, %s)",
         (position, url, alt))
        for position, (url, alt) in enumerate(images)
    ]  # fmt: skip


async def insert_product(
    pool: aiomysql.Pool,
    sku: str,
    price: str,
    attrs: str | None,
    images: Sequence[tuple[str, str | None]],
) -> int:
    await in_transaction(
        pool,
        [
            ("INSERT INTO product (sku, name, price, stock, released_on, attrs, revision,"
             " updated_at) VALUES (%s, %s, %s, 7, '2026-03-01', %s, 1, UTC_TIMESTAMP(6))",
             (sku, f"Product {sku}", price, attrs)),
            ("SET @id = LAST_INSERT_ID()", ()),
            *images_sql(images),
            (OUTBOX_UPSERT, ()),
        ],
    )  # fmt: skip
    rows = await fetch_all(pool, "SELECT id FROM product WHERE sku = %s", (sku,))
    return int(rows[0]["id"])


async def change_product(
    pool: aiomysql.Pool, product_id: int, sets: str, args: tuple[Any, ...] = (), *more: Any
) -> None:
    """``UPDATE product SET <sets>, revision = revision + 1`` plus `more` statements (after the
    update, with @id set) and the outbox row, in one transaction."""
    await in_transaction(
        pool,
        [
            ("SET @id = %s", (product_id,)),
            (f"UPDATE product SET {sets}, revision = revision + 1,"
             " updated_at = UTC_TIMESTAMP(6) WHERE id = @id", args),
            *more,
            (OUTBOX_UPSERT, ()),
        ],
    )  # fmt: skip


async def hard_delete(pool: aiomysql.Pool, product_id: int) -> None:
    await in_transaction(
        pool,
        [
            ("SET @id = %s", (product_id,)),
            ("INSERT INTO search_revision_floor (aggregate_type, aggregate_id, revision,"
             " deleted_at) SELECT 'product', CAST(id AS CHAR), revision + 1, UTC_TIMESTAMP(6)"
             " FROM product WHERE id = @id", ()),
            ("DELETE FROM product_image WHERE product_id = @id", ()),
            ("DELETE FROM product WHERE id = @id", ()),
            (OUTBOX_TOMBSTONE, ()),
        ],
    )  # fmt: skip


async def require_shop_tables(pool: aiomysql.Pool) -> None:
    rows = await fetch_all(
        pool,
        "SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE()"
        " AND table_name IN ('product', 'product_image')",
        (),
    )
    if rows[0]["n"] != 2:
        pytest.fail(
            "a table of the shop example is missing: run deploy/local/migrate.sh (it applies"
            " schemas/sql/examples/*.sql)",
            pytrace=False,
        )


@pytest_asyncio.fixture(loop_scope="session")
async def members(app_pool: aiomysql.Pool) -> AsyncIterator[list[InProcessConsumer]]:
    """Two members of one new group, consuming the product topic into their own alias."""
    await require_shop_tables(app_pool)
    ensure_topics((TOPIC,))
    env = harness_env("shop", SEARCHSYNC_KAFKA_TOPICS=TOPIC, SEARCHSYNC_PROJECTION_MODULES=MODULE)
    first, second = InProcessConsumer(env), InProcessConsumer(env)
    projector = registry_from_settings(first.settings.projection).get("product")
    alias = first.settings.alias("product")
    es = make_es_client(first.settings)
    started: list[InProcessConsumer] = []
    try:
        await init_index(es, alias, projector.mapping, schema_version=projector.schema_version)
        await first.start()
        started.append(first)
        await second.start(join=True)
        started.append(second)
        yield started
    finally:
        codes = [await c.close() for c in started]
        with contextlib.suppress(NotFoundError):
            await es.indices.delete(index=f"{alias}_v1")
        await es.close()
        assert codes == [0] * len(started), f"consumers exited with {codes}"


async def test_shop_rows_written_by_sql_converge_field_by_field(
    members: list[InProcessConsumer], app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    u = uuid.uuid4().hex[:8]
    settings = members[0].settings
    attrs = '{"colour": "红", "size": {"w": 10, "h": 2.5}, "tags": ["a", "b"]}'
    ids = [
        await insert_product(app_pool, f"shop-{u}-{i}", f"{i}9.9{i}", attrs, [(f"u{i}", None)])
        for i in range(4)
    ]
    # updates: an exact price that a float would round, new JSON, the stock
    await change_product(
        app_pool, ids[0], "price = %s, attrs = %s, stock = stock - 2",
        ("12345678.05", '{"colour": "blue", "n": 1}'),
    )  # fmt: skip
    # a child replacement: the images anew, in another order
    await change_product(
        app_pool, ids[1], "name = %s", ("Renamed",),
        ("DELETE FROM product_image WHERE product_id = @id", ()),
        *images_sql([("b.png", "second"), ("a.png", None), ("c.png", "third")]),
    )  # fmt: skip
    # a soft delete and its restore; a soft delete that stays
    await change_product(app_pool, ids[2], "deleted_at = UTC_TIMESTAMP(6)")
    await change_product(app_pool, ids[2], "deleted_at = NULL, released_on = NULL")
    await change_product(app_pool, ids[0], "deleted_at = UTC_TIMESTAMP(6)")
    await hard_delete(app_pool, ids[3])
    ids.append(await insert_product(app_pool, f"shop-{u}-late", "0.10", None, []))

    keys = [str(i) for i in ids]
    registry = registry_from_settings(settings.projection)
    projector = registry.get("product")
    truth = MysqlTruth(consumer_pool)
    rows = await truth.rows_by_id(projector, keys, primary=True)
    floors = await truth.revision_floors("product", keys, primary=True)
    assert sorted(rows) == sorted(keys[:3] + keys[4:]) and floors == {keys[3]: 2}
    want: dict[str, Document] = {
        k: projector.project(rows[k]) if k in rows else projector.tombstone(k, floors[k])
        for k in keys
    }
    es = make_es_client(settings)
    alias = settings.alias("product")
    last = [""]
    try:

        async def check() -> bool:
            ok, why = await converged(es, alias, want)
            last[0] = why
            return ok

        try:
            await wait_for(check, 30, "every product document equals the projection of its row")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; last difference: {last[0]}") from None
        found: Any = await es.mget(index=alias, ids=keys)
        sources = {d["_id"]: d for d in found["docs"]}
    finally:
        await es.close()

    # field by field against the rows as plain SQL reads them
    raw = {
        str(r["id"]): r
        for r in await fetch_all(
            consumer_pool,
            "SELECT id, sku, name, price, stock, released_on, attrs, revision, deleted_at,"
            " updated_at FROM product WHERE id IN (%s, %s, %s, %s)",
            (ids[0], ids[1], ids[2], ids[4]),
        )
    }
    images = await fetch_all(
        consumer_pool,
        "SELECT product_id, position, url, alt FROM product_image"
        " WHERE product_id IN (%s, %s, %s, %s) ORDER BY product_id, position",
        (ids[0], ids[1], ids[2], ids[4]),
    )
    for key, row in raw.items():
        hit = sources[key]
        doc = hit["_source"]
        assert hit["_version"] == row["revision"] == doc["source_revision"]
        assert doc["id"] == key == str(row["id"])
        assert (doc["sku"], doc["name"], doc["stock"]) == (row["sku"], row["name"], row["stock"])
        assert isinstance(doc["price"], str) and Decimal(doc["price"]) == row["price"]
        assert doc["price"] == f"{row['price']:.2f}"  # the column's scale, exactly
        released = row["released_on"]
        assert doc["released_on"] == (None if released is None else released.isoformat())
        stamp = datetime.strptime(doc["updated_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
        assert stamp == row["updated_at"]  # to the microsecond (naive UTC)
        assert doc["attrs"] == (None if row["attrs"] is None else json.loads(row["attrs"]))
        mine = [i for i in images if str(i["product_id"]) == key]
        assert doc["images"] == [
            {"position": i["position"], "url": i["url"], "alt": i["alt"]} for i in mine
        ]
        assert doc["is_deleted"] is (row["deleted_at"] is not None)
    p0, p1, p2 = (sources[k]["_source"] for k in keys[:3])
    assert p0["price"] == "12345678.05" and p0["attrs"] == {"colour": "blue", "n": 1}
    assert p0["is_deleted"] and p0["stock"] == 5 and sources[keys[0]]["_version"] == 3
    assert [i["url"] for i in p1["images"]] == ["b.png", "a.png", "c.png"]
    assert p2["is_deleted"] is False and p2["released_on"] is None
    assert sources[keys[2]]["_version"] == 3
    tomb = sources[keys[3]]
    assert tomb["_version"] == 2 and tomb["_source"]["is_deleted"] is True
    assert sources[keys[4]]["_source"]["images"] == []
    assert sum(c.metric("outbox_dead_total") for c in members) == 0
    assert all(c.metric("searchsync_partitions_assigned") > 0 for c in members)
    stamped = datetime.strptime(p0["updated_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert stamped <= datetime.now(UTC)
