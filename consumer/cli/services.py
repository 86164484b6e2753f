"""What the commands talk to, in one replaceable object.

`Services()` holds the real factories. A test passes its own through ``main(argv, services=...)``
(for example a fake Kafka admin, or a fake Elasticsearch client), so no command reaches for a
module-level client and no test patches a private helper.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from consumer.config import Settings
from consumer.kafka.admin import AdminFactory, ConfluentKafkaAdmin
from consumer.kafka.producer import ProducerFactory
from consumer.ops.dlq import ConsumerFactory
from consumer.projection import ProjectorRegistry, default_registry


class RunConsumer(Protocol):
    """The shape of `consumer.app.run_consumer` as `searchsync run` calls it."""

    def __call__(
        self, settings: Settings, *, stop: asyncio.Event, registry: ProjectorRegistry
    ) -> Awaitable[int]: ...


def build_registry(settings: Settings) -> ProjectorRegistry:
    """The projector registry every command uses: the one place the CLI builds it."""
    return default_registry()


def _es_client(settings: Settings) -> Any:
    from consumer.search.client import make_es_client  # elasticsearch only where it is needed

    return make_es_client(settings)


@dataclass(frozen=True, slots=True)
class Services:
    """Factories for every outside collaborator of a command.

    `kafka_consumer` and `kafka_producer` are None for confluent-kafka's own clients, and
    `run_consumer` None for `consumer.app.run_consumer` (imported only by `searchsync run`).
    """

    es_client: Callable[[Settings], Any] = _es_client
    kafka_admin: AdminFactory = ConfluentKafkaAdmin
    kafka_consumer: ConsumerFactory | None = None
    kafka_producer: ProducerFactory | None = None
    registry: Callable[[Settings], ProjectorRegistry] = build_registry
    run_consumer: RunConsumer | None = None
