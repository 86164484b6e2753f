"""The append-only record of accepted history gaps (invariant 14), ``search_offset_gap_ack``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass
from datetime import datetime
from typing import Protocol

import aiomysql

from searchsync.mysql.pool import db_time, transaction_cursor


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
