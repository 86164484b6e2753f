"""The owner epoch of each partition a consumer group reads, ``search_partition_owner``: the fence
of the rewrites at an unchanged revision (docs/design.md, invariant 17, "Owner epochs").

A member `take`s a partition's epoch (one more than the last) before it reads the truth for that
partition's events, and writes a rewrite only inside `fenced`, which holds a shared lock on the
partition's row and yields the partitions whose epoch is still the one this member took. A take is
an exclusive lock on that row, so it waits for every rewrite in progress to end: each rewrite either
ends before the next owner takes the partition (whose reads then see at least what it read) or
finds another epoch and writes nothing. A member frozen between its check and its write keeps its
lock, and the next owner waits for it."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import AsyncIterator, Collection, Iterable
from datetime import UTC, datetime
from typing import Final

import aiomysql

from searchsync.errors import ErrorCode, TransientError
from searchsync.mysql.pool import db_time, mysql_error_code, transaction_cursor
from searchsync.types import TopicPartition

_TAKE = (
    "INSERT INTO search_partition_owner (group_id, topic, partition_id, epoch, holder, taken_at)"
    " VALUES (%s, %s, %s, 1, %s, %s)"
    " ON DUPLICATE KEY UPDATE epoch = epoch + 1, holder = %s, taken_at = %s"
)
_READ = (
    "SELECT epoch FROM search_partition_owner"
    " WHERE group_id = %s AND topic = %s AND partition_id = %s"
)
_WAITED = (ErrorCode.MYSQL_LOCK_TIMEOUT, ErrorCode.MYSQL_DEADLOCK)
_NOT_SET_UP = (1142, 1146)  # command denied for the table; no such table
SET_UP: Final = (
    "apply schemas/sql/013_partition_owner.sql (`searchsync schema sql`) and grant the consumer"
    " SELECT, INSERT, UPDATE on it (`searchsync schema grants`)"
)


class OwnerEpochs:
    """This member's owner epochs, one per partition it took (the only state here; no I/O but
    through `pool`)."""

    def __init__(self, pool: aiomysql.Pool, group_id: str, holder: str | None = None) -> None:
        self._pool = pool
        self._group = group_id
        self._holder = holder or f"{socket.gethostname()}:{os.getpid()}"  # host:pid
        self._held: dict[TopicPartition, int] = {}

    def held(self) -> dict[TopicPartition, int]:
        return dict(self._held)

    async def take(self, partitions: Iterable[TopicPartition]) -> None:
        """Take the epoch of each of `partitions` this member does not hold yet, in one
        transaction (sorted: two takers lock in one order). `TransientError` OWNER_FENCED while a
        previous owner's rewrite holds one of them."""
        wanted = sorted(set(partitions) - self._held.keys())
        if not wanted:
            return
        at, holder = db_time(datetime.now(UTC)), self._holder
        taken: dict[TopicPartition, int] = {}
        try:
            async with transaction_cursor(self._pool, "taking partition owner epochs") as cur:
                for topic, partition in wanted:
                    await cur.execute(
                        _TAKE, (self._group, topic, partition, holder, at, holder, at)
                    )
                    await cur.execute(_READ, (self._group, topic, partition))
                    (epoch,) = await cur.fetchone()
                    taken[(topic, partition)] = int(epoch)
        except TransientError as exc:
            if exc.code not in _WAITED:
                raise
            raise TransientError(
                ErrorCode.OWNER_FENCED,
                f"waiting for a previous owner's rewrite to end before taking"
                f" {', '.join(f'{t}[{p}]' for t, p in wanted)}"
                f" ({exc.message})",
            ) from exc
        except aiomysql.MySQLError as exc:  # a deployment without the table: hold, lose nothing
            if mysql_error_code(exc) not in _NOT_SET_UP:
                raise
            message = f"search_partition_owner cannot be written ({exc}): {SET_UP}"
            raise TransientError(ErrorCode.OWNER_FENCED, message) from exc
        self._held.update(taken)

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        """`partitions` came or went in a rebalance (or another member took them): the next work
        of one takes its epoch anew."""
        for tp in partitions:
            self._held.pop(tp, None)

    @contextlib.asynccontextmanager
    async def fenced(
        self, partitions: Collection[TopicPartition]
    ) -> AsyncIterator[frozenset[TopicPartition]]:
        """The partitions of `partitions` whose epoch is still this member's, their rows locked
        (shared) until the block ends; those whose epoch moved are forgotten. `TransientError` when
        the check cannot be made or its transaction not committed (then a write made inside may
        not have been fenced: retry it)."""
        ours: set[TopicPartition] = set()
        async with transaction_cursor(self._pool, "checking partition owner epochs") as cur:
            for topic, partition in sorted(partitions):
                await cur.execute(_READ + " LOCK IN SHARE MODE", (self._group, topic, partition))
                row = await cur.fetchone()
                held = self._held.get((topic, partition))
                if row is not None and held is not None and int(row[0]) == held:
                    ours.add((topic, partition))
            self.forget(set(partitions) - ours)
            yield frozenset(ours)
