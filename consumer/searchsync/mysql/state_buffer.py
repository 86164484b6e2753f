"""The projection state off the hot path: each batch's outcomes coalesced per key and written on a
timer, on revocation and at shutdown. After a quiet period the table holds what unbuffered writes
would have (each entry's success and error are written as two rows, in the order they happened,
each at its own time). A failed flush keeps its entries for the next: state never blocks the index.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from searchsync.clock import utc_now
from searchsync.mysql.pool import db_time
from searchsync.mysql.projection_state import StateRecorder, StateUpdate

log = logging.getLogger(__name__)

FLUSH_ROWS: Final = 2_000  # rows per upsert statement


@dataclass(slots=True)
class _Pending:
    source_revision: int
    success: StateUpdate | None = None
    success_at: datetime | None = None
    error: StateUpdate | None = None
    error_at: datetime | None = None

    def add(self, update: StateUpdate, at: datetime) -> None:
        self.source_revision = max(self.source_revision, update.source_revision)
        if update.indexed_revision is not None:
            self.add_success(update, at)
        elif update.error_code is not None:
            self.add_error(update, at)

    def add_success(self, update: StateUpdate, at: datetime) -> None:
        """Keep the highest indexed revision (the later on a tie) and the latest success time."""
        best, last, revision = self.success, self.success_at, update.indexed_revision or 0
        if best is None or last is None or (revision, at) >= (best.indexed_revision or 0, last):
            self.success = update
        self.success_at = at if last is None else max(last, at)

    def add_error(self, update: StateUpdate, at: datetime) -> None:
        if self.error_at is None or at >= self.error_at:
            self.error, self.error_at = update, at

    def absorb(self, older: _Pending) -> None:
        """Merge in an entry taken before this one (a failed flush's)."""
        self.source_revision = max(self.source_revision, older.source_revision)
        if older.success is not None and older.success_at is not None:
            self.add_success(older.success, older.success_at)
        if older.error is not None and older.error_at is not None:
            self.add_error(older.error, older.error_at)

    def rows(self, key: tuple[str, str], now: datetime) -> list[StateUpdate]:
        src = self.source_revision
        ok, ok_at, error, error_at = self.success, self.success_at, self.error, self.error_at
        if error is None and ok is not None and ok.at == ok_at and ok.source_revision == src:
            return [ok]  # the common case: one success, already the row to write
        rows: list[StateUpdate] = []
        if ok is not None and ok_at is not None:
            rows.append(replace(ok, source_revision=src, at=ok_at))
        if error is not None and error_at is not None:
            failure = replace(error, source_revision=src, at=error_at)
            first = ok_at is not None and error_at < ok_at  # in the order they happened
            rows.insert(0 if first else len(rows), failure)
        return rows or [StateUpdate(*key, src, at=now)]  # only "seen"


class StateBuffer:
    """Coalesces `StateUpdate`s per key and writes them through `recorder` when told."""

    def __init__(
        self,
        recorder: StateRecorder,
        *,
        interval_s: float,
        clock: Callable[[], float],
        wall_clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._recorder = recorder
        self._interval = interval_s
        self._clock = clock
        self._wall = wall_clock
        self._entries: dict[tuple[str, str], _Pending] = {}
        self._next = clock() + interval_s
        self._flushing: asyncio.Task[None] | None = None
        self._batch: list[StateUpdate] = []
        self._batch_at: datetime | None = None  # when this batch's successes happened

    def applied(
        self,
        aggregate_type: str,
        aggregate_id: str,
        source_revision: int,
        indexed_revision: int,
        schema_version: int | None,
        projection_hash: str,
    ) -> None:
        """A document of this batch was written (or found written) at `indexed_revision`."""
        at = self._batch_at
        if at is None:
            at = self._batch_at = db_time(self._wall())
        self._batch.append(
            StateUpdate(
                aggregate_type,
                aggregate_id,
                source_revision,
                indexed_revision,
                schema_version,
                projection_hash,
                at=at,
            )
        )

    def failed(
        self, aggregate_type: str, aggregate_id: str, source_revision: int, code: str, message: str
    ) -> None:
        """A work of this batch failed with `code` (retried or dead-lettered)."""
        self._batch.append(
            StateUpdate(
                aggregate_type,
                aggregate_id,
                source_revision,
                error_code=code,
                error_message=message,
            )
        )

    def end_batch(self) -> None:
        """Merge the outcomes reported since the last batch (they all happened now)."""
        batch, self._batch = self._batch, []
        self.add(batch)
        self._batch_at = None

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, updates: Sequence[StateUpdate]) -> None:
        """Merge a batch's updates (all of them happened now)."""
        if not updates:
            return
        at = db_time(self._wall())
        entries = self._entries
        for update in updates:
            key = (update.aggregate_type, update.aggregate_id)
            entry = entries.get(key)
            if entry is None:
                entry = entries[key] = _Pending(update.source_revision)
            entry.add(update, update.at or at)

    def flush_if_due(self) -> None:
        """Start a flush in the background when the interval has passed and none is running."""
        if self._clock() < self._next or self.tasks():
            return
        self._next = self._clock() + self._interval
        if self._entries:
            self._flushing = asyncio.create_task(self._flush_once())

    def tasks(self) -> set[asyncio.Task[None]]:
        running = self._flushing
        return {running} if running is not None and not running.done() else set()

    async def flush(self) -> None:
        """Write everything buffered now (after a running flush); errors are logged."""
        if running := self.tasks():
            await asyncio.wait(running)
        if self._entries:
            self._flushing = asyncio.create_task(self._flush_once())
            await asyncio.wait({self._flushing})

    async def _flush_once(self) -> None:
        taken, self._entries = self._entries, {}
        now = db_time(self._wall())
        rows = [row for key, entry in sorted(taken.items()) for row in entry.rows(key, now)]
        try:
            for start in range(0, len(rows), FLUSH_ROWS):
                await self._recorder.record(rows[start : start + FLUSH_ROWS])
        except Exception:
            log.warning("recording projection state failed; kept for the next flush", exc_info=True)
            for key, entry in taken.items():  # taken is older than anything added meanwhile
                newer = self._entries.get(key)
                if newer is None:
                    self._entries[key] = entry
                else:
                    newer.absorb(entry)
