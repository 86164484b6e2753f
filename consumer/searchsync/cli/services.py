"""What the commands talk to, in one replaceable object.

`Services()` holds the real factories. A test passes its own through ``main(argv, services=...)``
(for example a fake Kafka admin, or a fake Elasticsearch client), so no command reaches for a
module-level client and no test patches a private helper.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from searchsync.config import Settings
from searchsync.dlq.ledger import MysqlReplayLedger, ReplayLedger
from searchsync.dlq.replay import ConsumerFactory
from searchsync.kafka.admin import AdminFactory, ConfluentKafkaAdmin
from searchsync.kafka.connect import ConnectClient
from searchsync.kafka.producer import ProducerFactory
from searchsync.projection import ProjectorRegistry, registry_from_settings
from searchsync.search.port import IndexAdmin

if TYPE_CHECKING:
    from searchsync.ops.prune import ConnectorState, OutboxRows
    from searchsync.ops.repair.state import WheelSnapshot
    from searchsync.search.tombstones import TombstoneStore


class RunConsumer(Protocol):
    """The shape of `searchsync.app.run_consumer` as `searchsync run` calls it."""

    def __call__(
        self, settings: Settings, *, stop: asyncio.Event, registry: ProjectorRegistry
    ) -> Awaitable[int]: ...


def build_registry(settings: Settings) -> ProjectorRegistry:
    """The projector registry every command uses: the one place the CLI builds it.

    It comes from ``[projection] modules``; a bad entry raises `ConfigError` (exit 2).
    """
    return registry_from_settings(settings.projection)


def _es_client(settings: Settings) -> Any:
    from searchsync.search.client import make_es_client  # elasticsearch only where it is needed

    return make_es_client(settings)


def _index_admin(client: Any) -> IndexAdmin:
    from searchsync.search.elasticsearch import EsIndexAdmin

    return EsIndexAdmin(client)


async def _repair_state(settings: Settings, aggregate_types: list[str]) -> dict[str, WheelSnapshot]:
    """The repair wheel's state per type (``search_repair_*``; the searchsync user may SELECT)."""
    from searchsync.mysql.pool import pool_of
    from searchsync.ops.repair.state import MysqlWheelState, snapshot

    async with pool_of(settings.mysql, maxsize=1) as pool:
        return await snapshot(MysqlWheelState(pool), aggregate_types)


async def _outbox_stats(settings: Settings) -> tuple[int, datetime | None]:
    """Rows in ``search_outbox`` and the oldest ``created_at`` (the consumer user may SELECT)."""
    from searchsync.mysql.pool import pool_of

    async with (
        pool_of(settings.mysql, maxsize=1) as pool,
        pool.acquire() as conn,
        conn.cursor() as cur,
    ):
        await cur.execute("SELECT COUNT(*), MIN(created_at) FROM search_outbox")
        count, oldest = await cur.fetchone()
        return int(count), oldest


def _replay_ledger(settings: Settings) -> ReplayLedger:
    return MysqlReplayLedger(settings.mysql)  # connects on first use


def _tombstone_store(client: Any) -> TombstoneStore:
    from searchsync.search.tombstones import EsTombstones

    return EsTombstones(client)


def _connect(settings: Settings) -> ConnectorState:
    return ConnectClient(settings.connect)


@asynccontextmanager
async def _outbox_rows(settings: Settings) -> AsyncIterator[OutboxRows]:
    """``search_outbox`` through a small pool of the settings' MySQL user (it needs DELETE)."""
    from searchsync.mysql.outbox import MysqlOutbox
    from searchsync.mysql.pool import pool_of

    async with pool_of(settings.mysql, maxsize=1) as pool:
        yield MysqlOutbox(pool)


@dataclass(frozen=True, slots=True)
class Services:
    """Factories for every outside collaborator of a command.

    `kafka_consumer` and `kafka_producer` are None for confluent-kafka's own clients, and
    `run_consumer` None for `searchsync.app.run_consumer` (imported only by `searchsync run`).
    `replay_ledger` opens the DLQ replay ledger (MySQL); the command closes it.
    """

    es_client: Callable[[Settings], Any] = _es_client
    index_admin: Callable[[Any], IndexAdmin] = _index_admin  # the IndexAdmin port over a client
    kafka_admin: AdminFactory = ConfluentKafkaAdmin
    kafka_consumer: ConsumerFactory | None = None
    kafka_producer: ProducerFactory | None = None
    registry: Callable[[Settings], ProjectorRegistry] = build_registry
    run_consumer: RunConsumer | None = None
    outbox_stats: Callable[[Settings], Awaitable[tuple[int, datetime | None]]] = _outbox_stats
    replay_ledger: Callable[[Settings], ReplayLedger] = _replay_ledger
    # the rebuild's catch-up group: None for `searchsync.app.run_consumer` with a write target
    rebuild_catchup: Callable[..., Coroutine[Any, Any, int]] | None = None
    tombstone_store: Callable[[Any], TombstoneStore] = _tombstone_store  # over an ES client
    connect: Callable[[Settings], ConnectorState] = _connect  # Kafka Connect's REST API
    outbox_rows: Callable[[Settings], AbstractAsyncContextManager[OutboxRows]] = _outbox_rows
    # the repair wheel's state per aggregate type (`searchsync status`)
    repair_state: Callable[[Settings, list[str]], Awaitable[dict[str, WheelSnapshot]]] = (
        _repair_state
    )
