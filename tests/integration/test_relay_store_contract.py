"""The relay store contract (tests/contract; there against the fake, in
tests/unit/test_relay_store_contract.py) through `MysqlRelayStore` on MariaDB, each case on a
scratch copy of the outbox of its own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import aiomysql
import pytest
from searchsync.mysql.pool import expand_in
from searchsync.relay.mysql_store import MysqlRelayStore

from tests.contract.relay_store_contract import RELAY_STORE_CASES, RelayBackend
from tests.integration.conftest_mysql import MysqlTarget, fetch_all, root_socket
from tests.integration.relay_scratch import *  # noqa: F403  (the scratch_outbox fixture)
from tests.integration.relay_scratch import insert_rows
from tests.scratch import admin_execute

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


class MysqlRelayBackend:
    def __init__(self, pool: aiomysql.Pool, table: str, database: str) -> None:
        self.pool, self.table, self.database = pool, table, database
        self.store = MysqlRelayStore(pool, table)

    async def add(self, aggregate_ids: list[str]) -> list[int]:
        events = await insert_rows(self.pool, self.table, aggregate_ids)
        rows = await fetch_all(
            self.pool,
            expand_in(
                f"SELECT id FROM `{self.table}` WHERE event_id IN %s ORDER BY id", len(events)
            ),
            tuple(events),
        )
        return [int(r["id"]) for r in rows]

    async def age(self, seconds: float) -> None:
        """As root: the relay's user may update only the claim columns, not ``created_at``."""
        micros = int(seconds * 1e6)
        await admin_execute(
            root_socket(),
            self.database,
            [
                f"UPDATE `{self.table}`"
                f" SET created_at = created_at - INTERVAL {micros} MICROSECOND,"
                f" locked_at = locked_at - INTERVAL {micros} MICROSECOND"
            ],
        )

    async def statuses(self) -> dict[int, tuple[str, int, str | None]]:
        rows = await fetch_all(
            self.pool, f"SELECT id, status, attempts, locked_by FROM `{self.table}`", ()
        )
        return {int(r["id"]): (r["status"], int(r["attempts"]), r["locked_by"]) for r in rows}


@pytest.mark.parametrize("case", RELAY_STORE_CASES, ids=lambda case: case.__name__)
async def test_relay_store_contract_on_mariadb(
    case: Callable[[RelayBackend], Awaitable[None]],
    consumer_pool: aiomysql.Pool,
    scratch_outbox: str,
    mysql_target: MysqlTarget,
) -> None:
    await case(MysqlRelayBackend(consumer_pool, scratch_outbox, mysql_target.database))
