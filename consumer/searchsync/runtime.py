"""One wiring: the shared resources of one process, and the consumer, the rebuilder and the repair
wheel built from them. `Runtime(settings)` opens the pool and search client on first use and
closes them when its ``async with`` ends; `Runtime(settings, ports)` uses given ports."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from contextlib import AsyncExitStack
from functools import cached_property
from types import TracebackType
from typing import Any

from searchsync.config import Settings
from searchsync.dlq.ledger import MysqlReplayLedger, ReplayLedger
from searchsync.exit_codes import ExitCode
from searchsync.kafka.admin import KafkaAdmin
from searchsync.kafka.connect import ConnectClient
from searchsync.mysql.pool import close_pool, open_pool
from searchsync.observability.metrics import Metrics
from searchsync.observability.rebuild_metrics import RebuildMetrics
from searchsync.ops.load.runner import LoadDeps, Loader
from searchsync.ops.prune import ConnectorState
from searchsync.ops.rebuild.deps import RebuildDeps
from searchsync.ops.rebuild.plan import catchup_settings
from searchsync.ops.rebuild.progress import Progress
from searchsync.ops.rebuild.runner import Rebuilder
from searchsync.ops.rebuild.state import RebuildRecord
from searchsync.ops.repair.heal import Healer
from searchsync.ops.repair.report import BucketReport
from searchsync.ops.repair.run import limits, wheel_config
from searchsync.ops.repair.wheel import Wheel
from searchsync.projection import Projector, ProjectorRegistry, registry_from_settings
from searchsync.resources import KafkaClients, Ports, Search, Tables
from searchsync.search.client import make_es_client

log = logging.getLogger(__name__)


class Runtime:
    """The ports of one process (opened lazily, or given) and the parts built on them."""

    def __init__(self, settings: Settings, ports: Ports | None = None) -> None:
        self.settings = settings
        self._given = ports
        self._stack = AsyncExitStack()
        self._tables: Tables | None = None
        self._search: Search | None = None
        self._opening = asyncio.Lock()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close what was opened (the pool, the search client); the next use opens them again."""
        stack, self._stack = self._stack, AsyncExitStack()
        self._tables = self._search = None
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
        return ConnectClient(self.settings.connect) if self._given is None else self._given.connect

    def replay_ledger(self) -> ReplayLedger:
        """The DLQ replay ledger (the caller closes it)."""
        if self._given is None:
            return MysqlReplayLedger(self.settings.mysql)
        return self._given.replay_ledger

    def search(self) -> Search:
        """The search service (the real client is made on first use; it connects lazily)."""
        if self._given is not None:
            return self._given.search
        if self._search is None:
            client = make_es_client(self.settings)
            self._stack.push_async_callback(client.close)
            self._search = Search.over(client, self.settings)
        return self._search

    async def tables(self) -> Tables:
        """The MySQL tables (the real pool is opened on first use)."""
        if self._given is not None:
            return self._given.tables
        async with self._opening:  # concurrent first uses open one pool
            if self._tables is None:
                pool = await open_pool(self.settings.mysql)
                self._stack.push_async_callback(close_pool, pool)
                self._tables = Tables.over(pool, self.settings)
        return self._tables

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
        return await run(
            self.settings,
            stop=stop,
            registry=registry,
            metrics=metrics or Metrics(),
            tables=await self.tables(),
            search=self.search(),
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
            RebuildDeps(
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
        )

    async def loader(self, *, progress: Progress) -> Loader:
        """A `Loader` that writes through the alias, as the live consumer does."""
        tables, search = await self.tables(), self.search()
        return Loader(
            LoadDeps(
                settings=self.settings,
                registry=self.registry,
                index_admin=search.admin,
                writer=search.aliased,
                truth=tables.truth,
                kafka=self.kafka_admin(),
                state=tables.load_state,
                progress=progress,
            )
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
            config=wheel_config(self.settings, content_share=content_share),
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
