"""One wiring: the shared resources of one process, and the consumer, the rebuilder and the repair
wheel built from them. `Runtime(settings)` opens the pool and search client on first use and
closes them when its ``async with`` ends; `Runtime(settings, ports)` uses given ports. It is the
one place that opens a pool or a client; the commands and side doors take theirs from it."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from functools import cached_property
from types import TracebackType
from typing import Any

import aiomysql

from searchsync.config import Settings
from searchsync.dlq.record import DlqProducer
from searchsync.dlq.replays import MysqlReplayLedger, ReplayLedger
from searchsync.exit_codes import ExitCode
from searchsync.kafka.admin import KafkaAdmin
from searchsync.kafka.connect import ConnectClient, ConnectorState
from searchsync.mysql.pool import close_pool, open_pool
from searchsync.observability.metrics import Metrics
from searchsync.observability.rebuild_metrics import RebuildMetrics
from searchsync.ops.load.runner import Loader
from searchsync.ops.rebuild.plan import catchup_settings
from searchsync.ops.rebuild.progress import Progress
from searchsync.ops.rebuild.records import RebuildRecord
from searchsync.ops.rebuild.runner import Rebuilder
from searchsync.ops.repair.model import BucketReport
from searchsync.ops.repair.span import Healer
from searchsync.ops.repair.wheel import Wheel, limits
from searchsync.projection import Projector, ProjectorRegistry, registry_from_settings
from searchsync.resources import KafkaClients, Ports, SearchEngines, Stores
from searchsync.search.client import make_es_client
from searchsync.watch.canary import Canary, MysqlEsCanary

log = logging.getLogger(__name__)


class Runtime(AbstractAsyncContextManager["Runtime"]):
    """The ports of one process (opened lazily, or given) and the parts built on them."""

    def __init__(self, settings: Settings, ports: Ports | None = None) -> None:
        self.settings = settings
        self._given = ports
        self._stack = AsyncExitStack()
        self._pool: aiomysql.Pool | None = None
        self._client: Any = None
        self._tables: Stores | None = None
        self._search: SearchEngines | None = None
        self._connect: ConnectClient | None = None
        self._opening = asyncio.Lock()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close what was opened (the pool, the search and Connect clients); the next use opens
        them again."""
        stack, self._stack = self._stack, AsyncExitStack()
        self._pool = self._client = self._tables = self._search = self._connect = None
        self._opening = asyncio.Lock()
        await stack.aclose()

    # -- the ports -------------------------------------------------------------------------

    @cached_property
    def registry(self) -> ProjectorRegistry:
        """The projectors of ``[projection] modules``; a bad entry raises `ConfigError`."""
        return registry_from_settings(self.settings.projection)

    @property
    def kafka(self) -> KafkaClients:
        return KafkaClients() if self._given is None else self._given.kafka

    def kafka_admin(self) -> KafkaAdmin:
        return self.kafka.admin(self.settings.kafka.client_config())

    @property
    def connect(self) -> ConnectorState:
        """Kafka Connect's REST API (the real client's session closes with the runtime)."""
        if self._given is not None:
            return self._given.connect
        if self._connect is None:
            self._connect = ConnectClient(self.settings.connect)
            self._stack.push_async_callback(self._connect.aclose)
        return self._connect

    def replay_ledger(self) -> ReplayLedger:
        """The DLQ replay ledger (the caller closes it), blocking, on a runtime of its own: its
        pool lives on the ledger's own event loop."""
        if self._given is None:
            return MysqlReplayLedger(Runtime(self.settings))
        return self._given.replay_ledger

    async def pool(self) -> aiomysql.Pool:
        """The MySQL pool (opened on first use; concurrent first uses open one)."""
        async with self._opening:
            if self._pool is None:
                pool = await open_pool(self.settings.mysql)
                self._stack.push_async_callback(close_pool, pool)
                self._pool = pool
        return self._pool

    def search_client(self) -> Any:
        """The search engine's client (made on first use; it connects lazily)."""
        if self._client is None:
            client = make_es_client(self.settings)
            self._stack.push_async_callback(client.close)
            self._client = client
        return self._client

    def search(self) -> SearchEngines:
        if self._given is not None:
            return self._given.search
        if self._search is None:
            self._search = SearchEngines.over(self.search_client(), self.settings)
        return self._search

    async def tables(self) -> Stores:
        if self._given is not None:
            return self._given.tables
        if self._tables is None:
            self._tables = Stores.over(await self.pool(), self.settings)
        return self._tables

    async def canary(self) -> Canary:
        """The freshness canary: heartbeats through MySQL, read back from the search engine."""
        return MysqlEsCanary(await self.pool(), self.search_client(), self.settings.canary_id())

    # -- the parts ---------------------------------------------------------------------------

    async def run_consumer(
        self,
        stop: asyncio.Event,
        *,
        metrics: Metrics | None = None,
        write_targets: Mapping[str, str] | None = None,
    ) -> ExitCode:
        """The consumer (`searchsync.app.run_consumer`) until `stop` is set."""
        from searchsync.app import run_consumer as run  # the pipeline, only where it is needed

        registry = self.registry  # a bad `projection.modules` stops start-up before connecting
        # one line per request at INFO would drown the one line per event outcome
        for transport in ("elastic_transport", "opensearch"):  # the two engines' clients
            logging.getLogger(transport).setLevel(logging.WARNING)
        log.info("searchsync starting", extra={"settings": self.settings.redacted()})
        k = self.settings.kafka
        return await run(
            self.settings,
            stop=stop,
            registry=registry,
            metrics=metrics or Metrics(),
            tables=await self.tables(),
            search=self.search(),
            kafka_admin=self.kafka_admin(),  # the topic ids (thread-safe)
            dlq=DlqProducer(k.client_config(), topic=k.dlq_topic, factory=self.kafka.producer),
            connect=self.connect,
            write_targets=write_targets,
        )

    async def rebuilder(self, *, metrics: RebuildMetrics, progress: Progress) -> Rebuilder:
        """A `Rebuilder` whose catch-up group is a consumer of its own (`run_consumer`)."""
        settings, registry = self.settings, self.registry

        def catchup(
            record: RebuildRecord, topics: list[str], stop: asyncio.Event
        ) -> Coroutine[Any, Any, ExitCode]:
            return run_consumer(
                catchup_settings(settings, record.catchup_group, topics),
                stop=stop,
                write_targets={record.aggregate_type: record.target_index},
            )

        tables, search = await self.tables(), self.search()
        return Rebuilder(
            settings=settings,
            registry=registry,
            index_admin=search.admin,
            writer=search.physical,  # the backfill addresses the new physical index
            reader=search.physical,
            truth=tables.truth,
            kafka=self.kafka_admin(),
            state=tables.rebuild_state,
            catchup=catchup,
            metrics=metrics,
            progress=progress,
            outbox=tables.outbox,
        )

    async def loader(self, *, progress: Progress) -> Loader:
        """A `Loader` that writes through the alias, as the live consumer does."""
        tables, search = await self.tables(), self.search()
        return Loader(
            settings=self.settings,
            registry=self.registry,
            index_admin=search.admin,
            writer=search.aliased,
            truth=tables.truth,
            kafka=self.kafka_admin(),
            state=tables.load_state,
            progress=progress,
        )

    async def repair_wheel(
        self,
        projectors: list[Projector],
        *,
        dry_run: bool,
        progress: Callable[[BucketReport, int, int], None] | None = None,
        kafka_admin: KafkaAdmin | None = None,
        content_share: float | None = None,
    ) -> Wheel:
        """The repair wheel over `projectors`; `kafka_admin` reads the live lag for its guard."""
        r, tables, search = self.settings.repair, await self.tables(), self.search()
        if content_share is not None:
            r = dataclasses.replace(r, content_share=content_share)
        bounds = limits(self.settings, kafka_admin)
        return Wheel(
            projectors=projectors,
            alias_for=self.settings.alias,
            truth=tables.truth,
            index=search.aliased,
            state=tables.wheel_state,
            healer=Healer(
                tables.outbox,
                appends_per_s=r.appends_per_s,
                dry_run=dry_run,
                guard=bounds.lag,
                batch_size=r.append_batch,
            ),
            settings=r,
            tombstone_minimum=self.settings.retention.tombstone_minimum,
            progress=progress,
            limits=bounds,
        )


async def run_consumer(
    settings: Settings,
    *,
    stop: asyncio.Event | None = None,
    metrics: Metrics | None = None,
    write_targets: Mapping[str, str] | None = None,
) -> ExitCode:
    """A consumer of ``settings`` on a runtime of its own, until `stop` is set."""
    async with Runtime(settings) as runtime:
        return await runtime.run_consumer(
            stop or asyncio.Event(), metrics=metrics, write_targets=write_targets
        )
