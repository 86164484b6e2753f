"""The Kafka record Debezium's Outbox Event Router makes of an outbox row (configured by
`searchsync.kafka.outbox_connector`; compared record for record by
tests/integration/test_relay_router_equivalence.py). Debezium's own ``__debezium.context.*``
headers describe the connector, not the event, and are not forged."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from searchsync.relay.port import OutboxEntry

ROUTER_HEADERS: Final = (
    "id",
    "searchsync-operation",
    "searchsync-revision",
    "searchsync-aggregate-type",
)

PARTITIONER: Final = {"partitioner": "murmur2_random"}
"""librdkafka's Java-compatible partitioner: a key lands where Debezium's record lands."""


@dataclass(frozen=True, slots=True)
class RouterRecord:
    topic: str
    key: bytes
    value: bytes
    headers: list[tuple[str, bytes]]


def router_record(entry: OutboxEntry, topic_template: str = "outbox.event.{type}") -> RouterRecord:
    """The record for `entry`: topic from `topic_template`, key the aggregate id (UTF-8), value
    the payload as compact JSON (keys in order, non-ASCII unescaped), `ROUTER_HEADERS`.
    ValueError when the payload is not a JSON object."""
    payload = json.loads(entry.payload)
    if not isinstance(payload, dict):
        raise ValueError(f"outbox row {entry.id}: payload is not a JSON object")
    value = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    fields = (entry.event_id, entry.operation, str(entry.source_revision), entry.aggregate_type)
    return RouterRecord(
        topic=topic_template.replace("{type}", entry.aggregate_type),
        key=entry.aggregate_id.encode("utf-8"),
        value=value.encode("utf-8"),
        headers=[(name, v.encode("utf-8")) for name, v in zip(ROUTER_HEADERS, fields, strict=True)],
    )
