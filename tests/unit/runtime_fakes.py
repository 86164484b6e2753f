"""A `Runtime` on fakes for ``main(argv, runtime=...)``.

`Fakes(...)` is the factory ``main`` takes: each command gets a `FakeRuntime` on the ports the
test gave; every port it did not give is a stand-in that fails the test when it is used.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import fields
from typing import Any

from searchsync.config import Settings
from searchsync.exit_codes import ExitCode
from searchsync.observability.metrics import Metrics
from searchsync.resources import KafkaClients, Ports, SearchEngines, Stores
from searchsync.runtime import Runtime

from tests.fakes.lineage import FakeTopicLineage
from tests.fakes.repair_lease import FakeLeaseStore
from tests.fakes.replay_ledger import FakeReplayLedger

RunConsumer = Callable[["FakeRuntime", asyncio.Event], Awaitable[int]]


class Unused:
    """A port the test did not give: any use of it fails."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        raise AssertionError(f"the test gave no {self._name} (used: .{attr})")


def tables_of(**given: Any) -> Stores:
    """`Stores` of the given fakes, `Unused` for the rest (an empty topic lineage and free repair
    leases unless given: every offsets reset and every repair uses them)."""
    given.setdefault("lineage", FakeTopicLineage())
    given.setdefault("repair_lease", FakeLeaseStore())
    return Stores(**{f.name: given.get(f.name, Unused(f.name)) for f in fields(Stores)})


def search_of(**given: Any) -> SearchEngines:
    """`SearchEngines` of the given fakes, `Unused` for the rest."""
    return SearchEngines(
        **{f.name: given.get(f.name, Unused(f.name)) for f in fields(SearchEngines)}
    )


class FakeRuntime(Runtime):
    """A `Runtime` on given ports that counts how often it was closed; `consumer` stands in for the
    pipeline in `run_consumer` when given."""

    def __init__(self, settings: Settings, ports: Ports, consumer: RunConsumer | None) -> None:
        super().__init__(settings, ports)
        self.closed = 0
        self._consumer = consumer

    async def aclose(self) -> None:
        self.closed += 1
        await super().aclose()

    async def run_consumer(
        self, stop: asyncio.Event, *, metrics: Metrics | None = None, **kwargs: Any
    ) -> ExitCode:
        if self._consumer is None:
            return await super().run_consumer(stop, metrics=metrics, **kwargs)
        return ExitCode(await self._consumer(self, stop))


class Fakes:
    """The runtime factory for ``main``; `made` holds every runtime it built, in order."""

    def __init__(
        self,
        *,
        tables: Stores | None = None,
        search: SearchEngines | None = None,
        connect: Any = None,
        replay_ledger: Any = None,
        kafka: KafkaClients | None = None,
        consumer: RunConsumer | None = None,
    ) -> None:
        self.ports = Ports(
            tables=tables or tables_of(),
            search=search or search_of(),
            connect=connect or Unused("connect"),
            replay_ledger=replay_ledger or FakeReplayLedger(),
            kafka=kafka or KafkaClients(),
        )
        self.consumer = consumer
        self.made: list[FakeRuntime] = []

    def __call__(self, settings: Settings) -> Runtime:
        runtime = FakeRuntime(settings, self.ports, self.consumer)
        self.made.append(runtime)
        return runtime
