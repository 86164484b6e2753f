"""A scratch copy of ``search_outbox`` and a fresh topic for the relay's integration tests.

Debezium captures only ``search_outbox`` (``table.include.list``), so rows written to a copy
reach Kafka only through the relay under test, and the relay never claims the shared table's
rows. The copy is granted to the consumer's MySQL user as the relay needs (SELECT, UPDATE, plus
INSERT and DELETE for the tests) and dropped afterwards. `topic` is a fresh topic for the relay's
records.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import aiomysql
import pytest
import pytest_asyncio
from searchsync.events import encode_json
from searchsync.mysql.pool import transaction
from searchsync.types import Operation, ThinEvent

from tests.integration.conftest import KAFKA
from tests.integration.conftest_mysql import MysqlTarget, root_socket
from tests.integration.kafkatools import fresh_topics
from tests.scratch import admin_execute

__all__ = ["insert_rows", "scratch_outbox", "topic"]


@pytest.fixture
def topic() -> Iterator[str]:
    """A fresh topic ``it-relay-<hex>.wiki_page`` (3 partitions) for the relay to publish to."""
    name = f"it-relay-{uuid.uuid4().hex[:8]}.wiki_page"
    with fresh_topics(KAFKA, [(name, 3)]):
        yield name


CLAIM_COLUMNS = "status, attempts, available_at, locked_by, locked_at, last_error, updated_at"


@pytest_asyncio.fixture(loop_scope="session")
async def scratch_outbox(mysql_target: MysqlTarget) -> AsyncIterator[str]:
    table = f"it{uuid.uuid4().hex[:8]}_outbox"
    t = mysql_target
    await admin_execute(
        root_socket(),
        t.database,
        [
            f"CREATE TABLE `{table}` LIKE `search_outbox`",
            # the grants deploy/local/migrate.sh gives on search_outbox: UPDATE of the claim only
            f"GRANT SELECT, INSERT, DELETE ON `{table}` TO '{t.consumer_user}'@'%'",
            f"GRANT UPDATE ({CLAIM_COLUMNS}) ON `{table}` TO '{t.consumer_user}'@'%'",
        ],
    )
    try:
        yield table
    finally:  # a dropped table keeps its grants in MariaDB: revoke them first
        await admin_execute(
            root_socket(),
            t.database,
            [
                f"REVOKE ALL PRIVILEGES ON `{table}` FROM '{t.consumer_user}'@'%'",
                f"DROP TABLE IF EXISTS `{table}`",
            ],
        )


async def insert_rows(
    pool: aiomysql.Pool,
    table: str,
    aggregate_ids: list[str],
    *,
    aggregate_type: str = "wiki_page",
    payload: str | None = None,
) -> list[str]:
    """One UPSERT row per id (revision 1) in `table`; their event ids, in insertion order."""
    events = [
        ThinEvent(str(uuid.uuid4()), aggregate_type, a, Operation.UPSERT, 1) for a in aggregate_ids
    ]
    async with transaction(pool) as conn, conn.cursor() as cur:
        await cur.executemany(
            f"INSERT INTO `{table}` (event_id, aggregate_type, aggregate_id, operation,"
            " source_revision, payload, available_at, created_at, updated_at)"
            " VALUES (%s, %s, %s, 'UPSERT', 1, %s, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6),"
            " UTC_TIMESTAMP(6))",
            [
                (
                    e.event_id,
                    aggregate_type,
                    e.aggregate_id,
                    payload if payload is not None else encode_json(e).decode(),
                )
                for e in events
            ],
        )
    return [e.event_id for e in events]
