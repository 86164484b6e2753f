"""The freshness canary: a heartbeat row (``search_canary``, type `CANARY_TYPE`, its own projector
and alias) written with its outbox event as an application writes, so it goes the whole way;
``now - beat_at`` of the document on the alias is the age of the newest searchable heartbeat."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final, Protocol

import aiomysql

from searchsync.mysql.outbox import append_outbox
from searchsync.mysql.pool import db_time, transaction_cursor
from searchsync.projection import Projector, Row
from searchsync.types import Operation

CANARY_TYPE: Final = "searchsync_canary"
TABLE: Final = "search_canary"

_MAPPING: Final[dict[str, Any]] = {  # searchsync adds its reserved properties
    "settings": {"number_of_shards": 1, "number_of_replicas": 0},
    "mappings": {"dynamic": "strict", "properties": {"beat_at": {"type": "date"}}},
}


def build(row: Row) -> dict[str, Any]:
    """The heartbeat's fields: when it was committed."""
    at = row["beat_at"]
    if not isinstance(at, datetime):
        raise ValueError(f"beat_at must be a DATETIME, got {type(at).__name__}")
    return {"beat_at": _aware(at).isoformat(), "is_deleted": row["deleted_at"] is not None}


def projectors() -> tuple[Projector, ...]:
    """The plug-in contract of ``[projection] modules``: add ``searchsync.watch.canary``."""
    return (
        Projector(
            aggregate_type=CANARY_TYPE,
            schema_version=1,
            table=TABLE,
            columns=("id", "beat_at", "revision", "deleted_at"),
            build=build,
            mapping=_MAPPING,
        ),
    )


class Canary(Protocol):
    """Where heartbeats are written and looked for."""

    async def beat(self, now: datetime) -> int:
        """Commit one heartbeat at `now` with its outbox event; its revision."""

    async def beat_at(self, alias: str) -> datetime | None:
        """``beat_at`` of the heartbeat document the alias serves (None: none yet)."""


class MysqlEsCanary:
    """`Canary` on MySQL, the row and its outbox event in one transaction (invariant 1), and an
    ``AsyncElasticsearch`` client, which searches: a real-time GET through the alias would see an
    unrefreshed write, a search sees only what is searchable. `canary_id` is the deployment's own
    row (`Settings.canary_id`): deployments sharing a database each watch their own heartbeat."""

    def __init__(self, pool: aiomysql.Pool, client: Any, canary_id: str) -> None:
        self._pool = pool
        self._client = client
        self._id = canary_id

    async def beat(self, now: datetime) -> int:
        async with transaction_cursor(self._pool, "write search_canary") as cur:
            await cur.execute(
                "INSERT INTO search_canary (id, beat_at, revision) VALUES (%s, %s, 1)"
                " ON DUPLICATE KEY UPDATE revision = revision + 1, beat_at = VALUES(beat_at)",
                (self._id, db_time(now)),
            )
            await cur.execute("SELECT revision FROM search_canary WHERE id = %s", (self._id,))
            (revision,) = await cur.fetchone()
            await append_outbox(
                cur.connection, CANARY_TYPE, self._id, Operation.UPSERT, int(revision), now=now
            )
        return int(revision)

    async def beat_at(self, alias: str) -> datetime | None:
        found = await self._client.options(ignore_status=404).search(
            index=alias, query={"ids": {"values": [self._id]}}, size=1, source=["beat_at"]
        )
        hits = found.get("hits", {}).get("hits", []) if found else []
        return _aware(datetime.fromisoformat(hits[0]["_source"]["beat_at"])) if hits else None


def _aware(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
