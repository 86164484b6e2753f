"""The Kafka topic id a consumer group reads per topic, ``search_topic_lineage`` (invariant 14).
A member adopts the id of a topic the group has no record of; only an accepted reset replaces it."""

from __future__ import annotations

from collections.abc import Mapping
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
