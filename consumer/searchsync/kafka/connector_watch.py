"""The connector watch of `searchsync run` (``[connect] restart_failed_tasks``; docs/consumer.md):
every ``watch_interval_s`` it restarts each FAILED task once, except one failed on a purged binlog
(`binlog_gone`, said once with `BINLOG_RECOVERY`). Connect not answering is logged once per outage
and never stops the consumer."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Final

from searchsync.errors import ConnectUnavailable
from searchsync.kafka.connect import ConnectorState
from searchsync.observability.metrics import Metrics

log = logging.getLogger(__name__)

FAILED: Final = "FAILED"
# Debezium at start, and the server's error 1236 when the file is purged while it reads.
_BINLOG_GONE: Final = (
    "is no longer available on the server",
    "could not find first log file name in binary log index file",
)
BINLOG_RECOVERY: Final = (
    "the binlog position the connector needs was purged (MariaDB expire_logs_days), so the "
    "changes since are lost to CDC; restarting cannot help. Recover: take a new Debezium "
    "snapshot (snapshot.mode=when_needed, or re-register the connector under new offsets), "
    "then run `searchsync rebuild` for each type to reconcile the index"
)


def binlog_gone(trace: str | None) -> bool:
    """`trace` is a task failure caused by a purged binlog position."""
    text = (trace or "").lower()
    return any(marker in text for marker in _BINLOG_GONE)


class ConnectorWatch:
    def __init__(self, client: ConnectorState, *, interval_s: float, metrics: Metrics) -> None:
        self._client = client
        self._interval_s = interval_s
        self._metrics = metrics
        self._unreachable = False
        self.binlog_gone: set[tuple[str, int]] = set()  # tasks failed on a purged binlog

    async def check(self) -> int:
        """Restart every FAILED task; how many were restarted."""
        try:
            status = await self._client.status()
        except ConnectUnavailable as exc:
            if not self._unreachable:
                log.info("connector watch: %s; will try again", exc)
            self._unreachable = True
            return 0
        self._unreachable = False
        restarted = 0
        for task in status.tasks:
            if task.state != FAILED:
                self.binlog_gone.discard((status.name, task.id))
                continue
            if binlog_gone(task.trace):
                if (status.name, task.id) not in self.binlog_gone:
                    log.error(
                        "connector %s task %d is FAILED: %s", status.name, task.id, BINLOG_RECOVERY
                    )
                self.binlog_gone.add((status.name, task.id))
                continue
            log.warning(
                "connector %s task %d is FAILED (%s): restarting it",
                status.name,
                task.id,
                task.trace or "no trace",
            )
            try:
                await self._client.restart_task(task.id)
            except ConnectUnavailable as exc:
                log.warning("connector watch: restart of task %d failed: %s", task.id, exc)
                continue
            restarted += 1
            self._metrics.connector_task_restarted()
        return restarted

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.check()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._interval_s)
