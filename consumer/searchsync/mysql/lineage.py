"""A consumer group's history of its topics (invariant 14): the Kafka topic id it reads per topic,
``search_topic_lineage`` (a member adopts the id of a topic the group has no record of; only an
accepted reset replaces it), and the append-only record of accepted history gaps,
``search_offset_gap_ack``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass
from datetime import UTC, datetime
from typing import Protocol

import aiomysql

from searchsync.mysql.pool import db_time, fetch_all, transaction_cursor


class TopicLineage(Protocol):
    async def recorded(self, group: str) -> dict[str, str]:
        """topic -> the topic id `group` reads."""

    async def adopt(self, group: str, ids: Mapping[str, str]) -> None:
        """Record `ids` for the topics `group` has no record of; recorded ones stay."""

    async def accept(self, group: str, ids: Mapping[str, str], accepted_by: str) -> None:
        """Replace `group`'s records with `ids`, noting the previous id and who accepted it."""


class MysqlTopicLineage:
    def __init__(self, pool: aiomysql.Pool) -> None:
        self._pool = pool

    async def recorded(self, group: str) -> dict[str, str]:
        sql = "SELECT topic, topic_id FROM search_topic_lineage WHERE group_id = %s"
        rows = await fetch_all(self._pool, "reading the topic lineage", sql, (group,))
        return {str(t): str(i) for t, i in rows}

    async def adopt(self, group: str, ids: Mapping[str, str]) -> None:
        if not ids:
            return
        at = db_time(datetime.now(UTC))
        async with transaction_cursor(self._pool, "recording the topic lineage") as cur:
            await cur.executemany(
                "INSERT INTO search_topic_lineage (group_id, topic, topic_id, recorded_at)"
                " VALUES (%s, %s, %s, %s) ON DUPLICATE KEY UPDATE topic_id = topic_id",
                [(group, t, i, at) for t, i in sorted(ids.items())],
            )

    async def accept(self, group: str, ids: Mapping[str, str], accepted_by: str) -> None:
        if not ids:
            return
        at = db_time(datetime.now(UTC))
        async with transaction_cursor(self._pool, "accepting a topic lineage") as cur:
            for topic, topic_id in sorted(ids.items()):
                await cur.execute(
                    "SELECT topic_id FROM search_topic_lineage"
                    " WHERE group_id = %s AND topic = %s FOR UPDATE",
                    (group, topic),
                )
                row = await cur.fetchone()
                await cur.execute(
                    "INSERT INTO search_topic_lineage (group_id, topic, topic_id, recorded_at,"
                    " replaced_topic_id, accepted_by) VALUES (%s, %s, %s, %s, %s, %s)"
                    " ON DUPLICATE KEY UPDATE topic_id = VALUES(topic_id),"
                    " recorded_at = VALUES(recorded_at),"
                    " replaced_topic_id = VALUES(replaced_topic_id),"
                    " accepted_by = VALUES(accepted_by)",
                    (group, topic, topic_id, at, None if row is None else row[0], accepted_by),
                )


@dataclass(frozen=True, slots=True)
class GapAck:
    """Who accepted that `topic`/`partition` of `group` moves over lost records, and when."""

    group: str
    topic: str
    partition: int
    committed: int  # where the group stood
    log_start: int  # where the partition now begins
    missing: int
    accepted_by: str
    accepted_at: datetime


class GapAcks(Protocol):
    async def record(self, acks: Sequence[GapAck]) -> None:
        """Append `acks`, all or none (operators read the table)."""


class MysqlGapAcks:
    def __init__(self, pool: aiomysql.Pool) -> None:
        self._pool = pool

    async def record(self, acks: Sequence[GapAck]) -> None:
        if not acks:
            return
        rows = [(*astuple(a)[:-1], db_time(a.accepted_at)) for a in acks]
        async with transaction_cursor(self._pool, "recording the accepted history gaps") as cur:
            await cur.executemany(
                "INSERT INTO search_offset_gap_ack (group_id, topic, kafka_partition,"
                " committed_offset, log_start_offset, lost_records, accepted_by, accepted_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                rows,
            )
