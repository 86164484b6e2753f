"""The one outbox append: every writer of ``search_outbox`` goes through `append_outbox`.

The application-side writer (`consumer.writer`) calls it next to its row change, in the same
transaction (docs/design.md, invariant 1); the repair job calls it alone for REBUILD events; any
relay or tool that needs to publish an event does the same. One function means one row shape: the
``payload`` column always holds the thin event exactly as Debezium's Outbox Event Router publishes
it (`consumer.events.encode_json`).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from consumer.events import encode_json
from consumer.mysql.pool import db_time, translate_errors, utc_now
from consumer.types import Operation, ThinEvent

__all__ = ["append_outbox"]


async def append_outbox(
    conn: Any,
    aggregate_type: str,
    aggregate_id: str,
    operation: Operation | str,
    revision: int,
    *,
    now: datetime | None = None,
) -> str:
    """Insert one outbox row into `conn`'s open transaction and return its new ``event_id``.

    The ``payload`` column is the thin event as `consumer.events.encode_json` writes it, which is
    what Debezium's Outbox Event Router publishes. The caller owns the transaction: the writer
    calls this next to its row change; the repair job calls it alone for REBUILD events
    (``await with_transaction(pool, lambda c: append_outbox(c, ...))``).
    """
    op = Operation(operation)
    if revision < 1:
        raise ValueError(f"source_revision must be >= 1, got {revision}")
    event = ThinEvent(
        event_id=str(uuid.uuid4()),
        aggregate_type=aggregate_type,
        aggregate_id=aggregate_id,
        operation=op,
        source_revision=revision,
    )
    at = db_time(now if now is not None else utc_now())
    with translate_errors("insert search_outbox"):
        async with conn.cursor() as cur:
            await cur.execute(
                "INSERT INTO search_outbox (event_id, aggregate_type, aggregate_id, operation,"
                " source_revision, payload, available_at, created_at, updated_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    event.event_id,
                    aggregate_type,
                    aggregate_id,
                    op.value,
                    revision,
                    encode_json(event).decode("utf-8"),
                    at,
                    at,
                    at,
                ),
            )
    return event.event_id
