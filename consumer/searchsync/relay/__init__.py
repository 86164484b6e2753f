"""The polling relay (`searchsync relay`): publishes ``search_outbox`` rows to Kafka exactly as
Debezium's Outbox Event Router does, for deployments without Kafka Connect (docs/relay.md)."""

from __future__ import annotations

from searchsync.relay.port import DeadRow, OutboxCounts, OutboxEntry, RelayStore
from searchsync.relay.record import RouterRecord, router_record
from searchsync.relay.relay import Publisher, Relay, TickReport, seed_retry

__all__ = [
    "DeadRow",
    "OutboxCounts",
    "OutboxEntry",
    "Publisher",
    "Relay",
    "RelayStore",
    "RouterRecord",
    "TickReport",
    "router_record",
    "seed_retry",
]
