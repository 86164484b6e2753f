"""The Kafka record Debezium's Outbox Event Router makes of an outbox row, made by the relay.

`searchsync.kafka.outbox_connector` configures the router; for one row it produces (read off the
real stack, and compared record for record by tests/integration/test_relay_router_equivalence.py):

- topic ``outbox.event.<aggregate_type>`` (``route.by.field=aggregate_type`` and
  ``route.topic.replacement``, both from the same `topic_template`);
- key ``aggregate_id`` as UTF-8 (StringConverter), so the partition is Kafka's default
  partitioner's: murmur2 of the key, which librdkafka's ``murmur2_random`` computes alike;
- value: the ``payload`` JSON column expanded (``table.expand.json.payload``) and written by the
  JsonConverter without schemas: compact JSON, keys in the column's order, non-ASCII unescaped;
- headers ``id`` (``event_id``), then ``searchsync-operation``, ``searchsync-revision`` (the
  number in decimal) and ``searchsync-aggregate-type``, in the order of
  ``table.fields.additional.placement``.

Debezium also adds its own ``__debezium.context.*`` headers (connector name, task, run id).
They describe the connector, not the event; no searchsync code reads them and the relay does
not forge them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from searchsync.relay.port import OutboxEntry

__all__ = ["PARTITIONER", "ROUTER_HEADERS", "RouterRecord", "router_record"]

ROUTER_HEADERS: Final = (
    "id",
    "searchsync-operation",
    "searchsync-revision",
    "searchsync-aggregate-type",
)
"""The headers the router's configuration puts on every record, in its order."""

PARTITIONER: Final = {"partitioner": "murmur2_random"}
"""librdkafka's Java-compatible partitioner: a key lands where Debezium's record lands."""


@dataclass(frozen=True, slots=True)
class RouterRecord:
    topic: str
    key: bytes
    value: bytes
    headers: list[tuple[str, bytes]]


def router_record(entry: OutboxEntry, topic_template: str = "outbox.event.{type}") -> RouterRecord:
    """The record for `entry`; ValueError when its payload is not a JSON object."""
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
