"""The outside world of one process as ports: MySQL tables, the search service, Kafka client
factories, Kafka Connect and the DLQ replay ledger. `Ports` holds them built (tests' fakes);
`Stores.over` and `SearchEngines.over` build the real ones over an open pool and client."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import aiomysql

from searchsync.config import Settings
from searchsync.dlq.replays import ReplayLedger
from searchsync.dlq.scan import ConsumerFactory, kafka_consumer
from searchsync.kafka.admin import AdminFactory, ConfluentKafkaAdmin
from searchsync.kafka.connect import ConnectorState
from searchsync.kafka.producer import ProducerFactory, kafka_producer
from searchsync.mysql.fanout import FanoutStore, MysqlFanout
from searchsync.mysql.lineage import GapAcks, MysqlGapAcks, MysqlTopicLineage, TopicLineage
from searchsync.mysql.outbox import MysqlOutbox, Outbox
from searchsync.mysql.owner_epochs import OwnerEpochs
from searchsync.mysql.projection_state import ProjectionStateWriter, StateRecorder
from searchsync.mysql.truth import MysqlTruth, Truth
from searchsync.ops.load.parts import LoadStateStore, MysqlLoadState
from searchsync.ops.rebuild.records import MysqlRebuildState, RebuildStateStore
from searchsync.ops.repair.generations import MysqlWheelState, WheelState
from searchsync.ops.repair.lease import LeaseStore, MysqlLeaseStore
from searchsync.relay.mysql_store import MysqlRelayStore
from searchsync.relay.port import RelayStore
from searchsync.search.es_index import BulkSizer, EsIndex
from searchsync.search.port import IndexAdmin, SearchEngine
from searchsync.time_zones import parse_time_zone


@dataclass(frozen=True, slots=True)
class Stores:
    """The MySQL tables searchsync reads and writes."""

    truth: Truth
    outbox: Outbox
    projection_state: StateRecorder
    rebuild_state: RebuildStateStore
    wheel_state: WheelState
    repair_lease: LeaseStore
    gap_acks: GapAcks
    lineage: TopicLineage
    fanout: FanoutStore
    relay: RelayStore  # the outbox as the polling relay sees it (``[relay] table``)
    load_state: LoadStateStore  # the initial load's parts
    owners: OwnerEpochs  # this member's owner epochs (``kafka.group_id``'s partitions)

    @classmethod
    def over(cls, pool: aiomysql.Pool, settings: Settings) -> Stores:
        return cls(
            truth=MysqlTruth(
                pool,
                sync_hash_column=settings.repair.mysql_sync_hash_column,
                time_zone=parse_time_zone(settings.mysql.time_zone),
            ),
            outbox=MysqlOutbox(pool),
            projection_state=ProjectionStateWriter(pool),
            rebuild_state=MysqlRebuildState(pool),
            wheel_state=MysqlWheelState(pool),
            repair_lease=MysqlLeaseStore(pool),
            gap_acks=MysqlGapAcks(pool),
            lineage=MysqlTopicLineage(pool),
            fanout=MysqlFanout(pool),
            relay=MysqlRelayStore(pool, settings.relay.table),
            load_state=MysqlLoadState(pool),
            owners=OwnerEpochs(pool, settings.kafka.group_id),
        )


@dataclass(frozen=True, slots=True)
class SearchEngines:
    """The search service. `aliased` writes through aliases (``require_alias=true``: the live
    consumer; the repair and the read side read through it); `physical` writes the physical index
    it is given (a rebuild and its catch-up; the rebuild's reads and the purge use it)."""

    admin: IndexAdmin
    aliased: SearchEngine
    physical: SearchEngine

    @classmethod
    def over(cls, client: Any, settings: Settings) -> SearchEngines:
        es = settings.elasticsearch
        sizer = BulkSizer(es.bulk_max_actions, es.bulk_max_bytes)
        aliased = EsIndex(client, sizer=sizer, require_alias=True)
        return cls(aliased, aliased, EsIndex(client, sizer=sizer, require_alias=False))


@dataclass(frozen=True, slots=True)
class KafkaClients:
    """How Kafka clients are made from a client config (confluent-kafka's by default)."""

    admin: AdminFactory = ConfluentKafkaAdmin
    consumer: ConsumerFactory = kafka_consumer
    producer: ProducerFactory = kafka_producer


@dataclass(frozen=True, slots=True)
class Ports:
    """Every port, already built. The replay ledger is closed by the command that uses it."""

    tables: Stores
    search: SearchEngines
    connect: ConnectorState
    replay_ledger: ReplayLedger
    kafka: KafkaClients = field(default_factory=KafkaClients)
