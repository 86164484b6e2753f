"""The fan-out through a child table, on the real stack: products (tests/catalog.py, tables
``xc_product``, ``xc_product_category`` and ``xc_category``, created for this module) list their
categories in a link table; a category's rename goes through the connector to
``outbox.event.xc_category``, the consumer records the job, its worker finds the products through
the link table's index ``(category_id, product_id)`` and appends their REBUILDs.

Under live writes (products created listing the category, re-pointed away from it and towards
it, hard-deleted, while it is renamed), every product ends equal to the projection of its rows
(a tombstone for a deleted one), showing the new name wherever it lists the category, and no
document's version (or, at one version, the name it shows) ever moved backwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import aiomysql
import pytest
import pytest_asyncio
from elasticsearch import NotFoundError
from searchsync.projection import registry_from_settings
from searchsync.search.admin import init_index
from searchsync.search.client import make_es_client
from searchsync.writer import AggregateTable, AsyncAggregateWriter

from tests import catalog
from tests.integration.conftest_mysql import MysqlTarget
from tests.integration.consumer_harness import InProcessConsumer, harness_env
from tests.integration.doc_watch import watch_docs
from tests.integration.scratch_tables import scratch_tables
from tests.integration.test_aggregate_types_e2e import ensure_topics, expected, wait_converged

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

PRODUCT, LINK, CATEGORY = catalog.tables()
TOPICS = tuple(f"outbox.event.{t}" for t in (PRODUCT, CATEGORY))


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def consumer(mysql_target: MysqlTarget) -> AsyncIterator[InProcessConsumer]:
    ensure_topics(TOPICS)
    c = InProcessConsumer(
        harness_env(
            "xc",
            SEARCHSYNC_KAFKA_TOPICS=",".join(TOPICS),
            SEARCHSYNC_PROJECTION_MODULES="tests.catalog",
            # slow enough that the writes below meet the fan-out under way
            SEARCHSYNC_FANOUT_APPENDS_PER_S="100",
            SEARCHSYNC_FANOUT_PAGE_SIZE="5",
            SEARCHSYNC_FANOUT_POLL_INTERVAL_S="0.1",
            SEARCHSYNC_FANOUT_LEASE_S="5",
        )
    )
    p = registry_from_settings(c.settings.projection).get(PRODUCT)
    es = make_es_client(c.settings)
    async with scratch_tables(mysql_target, catalog.tables(), catalog.ddl()):
        try:
            await init_index(es, c.settings.alias(PRODUCT), p.mapping, schema_version=1)
            await c.start()
            try:
                yield c
            finally:
                assert await c.close() == 0
        finally:
            with contextlib.suppress(NotFoundError):
                await es.indices.delete(index=f"{c.settings.alias(PRODUCT)}_v*")
            await es.close()


class Catalog:
    """The application side: categories and products, each change one transaction with its
    outbox event (`AsyncAggregateWriter`); a product's links are its child rows."""

    def __init__(self, pool: aiomysql.Pool) -> None:
        self.categories = AsyncAggregateWriter(pool, AggregateTable(CATEGORY, CATEGORY))
        self.products = AsyncAggregateWriter(pool, AggregateTable(PRODUCT, PRODUCT))

    async def category(self, category_id: str, name: str, *, create: bool = False) -> None:
        write = self.categories.create if create else self.categories.update
        async with write(category_id, {"name": name}):
            pass

    async def product(self, product_id: str, links: Sequence[str], *, create: bool = False) -> None:
        """Create the product, or replace its links (a change of the aggregate)."""
        write = self.products.create if create else self.products.update
        async with write(product_id, {"title": product_id} if create else None) as change:
            cur = change.cursor
            await cur.execute(f"DELETE FROM {LINK} WHERE product_id = %s", (product_id,))
            for position, category_id in enumerate(links):
                await cur.execute(
                    f"INSERT INTO {LINK} (product_id, category_id, position) VALUES (%s, %s, %s)",
                    (product_id, category_id, position),
                )

    async def delete(self, product_id: str) -> None:
        """Hard-delete the product and its links."""
        async with self.products.hard_delete(product_id) as change:
            await change.cursor.execute(f"DELETE FROM {LINK} WHERE product_id = %s", (product_id,))


async def converge(consumer: InProcessConsumer, pool: aiomysql.Pool, ids: list[str]) -> None:
    registry = registry_from_settings(consumer.settings.projection)
    await wait_converged(consumer, pool, {PRODUCT: await expected(registry, pool, PRODUCT, ids)})


async def test_a_category_rename_reaches_every_product_listing_it(
    consumer: InProcessConsumer, app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    u = uuid.uuid4().hex[:8]
    app = Catalog(app_pool)
    a, b = f"xc-{u}-a", f"xc-{u}-b"
    await app.category(a, "alpha one", create=True)
    await app.category(b, "beta", create=True)
    listing = [f"xc-{u}-p{n:03}" for n in range(50)]  # list a; every fifth twice, some b too
    others = [f"xc-{u}-q{n:02}" for n in range(10)]  # list b only
    new = [f"xc-{u}-n{n:02}" for n in range(8)]  # created listing a during the rename
    for n, product_id in enumerate(listing):
        links = [a, b, a] if n % 5 == 0 else [b, a] if n % 3 == 0 else [a]
        await app.product(product_id, links, create=True)
    for product_id in others:
        await app.product(product_id, [b], create=True)
    ids = listing + others + new
    await converge(consumer, consumer_pool, listing + others)

    def rank(source: Mapping[str, Any]) -> int:
        shown = source.get("categories") or []
        return 1 if "alpha two" in shown else 0 if "alpha one" in shown else -1

    async with watch_docs(consumer, PRODUCT, ids, rank):

        async def meanwhile() -> None:
            for i, product_id in enumerate(new):
                await app.product(product_id, [b, a], create=True)
                await app.product(listing[-1 - i], [b])  # away from a
                await app.product(others[i], [a, b])  # towards a
                if i < 3:
                    await app.delete(listing[10 + 7 * i])  # ahead of or behind the cursor

        await asyncio.gather(app.category(a, "alpha two"), meanwhile())
        await converge(consumer, consumer_pool, ids)
    registry = registry_from_settings(consumer.settings.projection)
    docs = await expected(registry, consumer_pool, PRODUCT, ids)
    showing = [i for i, d in docs.items() if "alpha two" in d.body.get("categories", [])]
    assert len(showing) == 50 - 8 - 3 + 8 + 8  # away: 8; deleted: 3; created: 8; towards: 8
    assert sum(1 for d in docs.values() if d.is_deleted) == 3
    assert not any("alpha one" in d.body.get("categories", []) for d in docs.values())
    assert consumer.metric("searchsync_fanout_rebuilds_total") >= 42
