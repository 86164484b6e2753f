"""The backfill: keyset-scan the truth, project each row, write it with external versions into the
new physical index, then report the chunk to `on_chunk` (which persists the last id: a crash
repeats one chunk, harmlessly). A row the projector refuses counts as failed; a write refused
transiently is retried, then raises `TransientError` (``--resume``)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from searchsync.config import Settings
from searchsync.errors import Disposition, ErrorCode, PoisonMessage, TransientError
from searchsync.mysql.key_scope import KeyScope
from searchsync.mysql.truth import Truth
from searchsync.ops.chunks import ChunkController
from searchsync.projection import Projector, Row
from searchsync.search.sink import FINISHED_KINDS, IndexOp, OutcomeKind, Sink, WriteOutcome

_WRITE_ATTEMPTS: Final = 5
_FIRST_RETRY_S: Final = 0.5
_KEEP_FAILURES: Final = 20
_READ_AHEAD: Final = 2  # chunks scanned and projected ahead of the writes
_YIELD_EVERY: Final = 16  # rows projected between two turns of the event loop (~0.4 ms)
_AHEAD_PAUSE_S: Final = 0.001  # the reader's pause at each turn while the writer has a chunk
_INDEXED: Final = FINISHED_KINDS | {OutcomeKind.AHEAD}  # AHEAD: the index holds a newer revision


@dataclass(frozen=True, slots=True)
class ChunkDone:
    """One chunk written: where the scan stands now."""

    last_id: str
    rows: int  # rows in this chunk
    indexed: int  # written now or found written
    failed: int


@dataclass(frozen=True, slots=True)
class _Prepared:
    rows: int  # rows scanned (0: the end of the table)
    last_id: str  # the last of them ("" when there are none)
    ops: list[IndexOp]
    failures: list[tuple[str, str]]  # (id, why) of the rows the projector refused


@dataclass(slots=True)
class BackfillResult:
    last_id: str | None
    rows_done: int = 0  # by this run
    chunks: int = 0
    complete: bool = False  # False: stopped by `stop_after_chunks`
    tombstones: int = 0  # hard-deleted ids written as tombstones at their revision floor
    failures: list[tuple[str, str]] = field(default_factory=list)


@dataclass(kw_only=True, slots=True)
class Backfill:
    truth: Truth
    sink: Sink
    projector: Projector
    target_index: str
    chunks: ChunkController
    on_chunk: Callable[[ChunkDone], Awaitable[None]]
    # None: a rebuild, ending with the floor tombstones; else a load's part (key range and where),
    scope: KeyScope | None = None  # the rows that exist only: hard deletes are the live path's
    before_chunk: Callable[[], Awaitable[None]] | None = None  # the load's live-lag guard

    async def run(
        self, *, after_id: str | None, stop_after_chunks: int | None = None
    ) -> BackfillResult:
        """Scan from `after_id` to the end (or `stop_after_chunks` chunks, for drills), reading
        up to `_READ_AHEAD` chunks ahead of the writes; `on_chunk` follows each chunk's
        acknowledged writes, in scan order."""
        result = BackfillResult(after_id)
        ready: asyncio.Queue[_Prepared | Exception] = asyncio.Queue(maxsize=_READ_AHEAD)
        # A written chunk's objects (its ops, their outcomes: tens of thousands) are freed by the
        # reader, which runs while the next bulk is in flight, not between two bulks.
        retired: list[object] = []
        reader = asyncio.ensure_future(self._read(after_id, stop_after_chunks, ready, retired))
        last_done = time.monotonic()
        try:
            while stop_after_chunks is None or result.chunks < stop_after_chunks:
                chunk = await ready.get()
                if isinstance(chunk, Exception):
                    raise chunk
                if not chunk.rows:
                    if self.scope is None:
                        result.tombstones = await self._floor_tombstones(result)
                    result.complete = True
                    return result
                for doc_id, message in chunk.failures:
                    self._keep(result, doc_id, message)
                indexed, refused = await self._write(chunk.ops, result, retired)
                retired.append(chunk)
                failed = len(chunk.failures) + refused
                now = time.monotonic()
                self.chunks.observe(now - last_done)
                last_done = now
                result.last_id = chunk.last_id
                result.rows_done += chunk.rows
                result.chunks += 1
                await self.on_chunk(ChunkDone(result.last_id, chunk.rows, indexed, failed))
            return result
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    async def _read(
        self,
        after_id: str | None,
        stop_after_chunks: int | None,
        ready: asyncio.Queue[_Prepared | Exception],
        retired: list[object],
    ) -> None:
        """Scan and project chunk after chunk into `ready` (an empty chunk: the end). A failure
        is queued too, after the chunks read before it, so the writes of those still count.
        Before each chunk it frees what the writer has `retired`."""
        chunks = 0
        while stop_after_chunks is None or chunks < stop_after_chunks:
            retired.clear()
            try:
                if self.before_chunk is not None:
                    await self.before_chunk()
                chunk = await self._prepare(after_id, self.chunks.current, ready)
            except Exception as exc:
                await ready.put(exc)
                return
            await ready.put(chunk)
            if not chunk.rows:
                return
            chunks += 1
            after_id = chunk.last_id

    async def _floor_tombstones(self, result: BackfillResult) -> int:
        """Tombstones at their floor for the hard-deleted ids (`search_revision_floor`), so the
        new index holds every delete the old one held; idempotent. An id with a row at a newer
        revision is skipped: its own document outranks the tombstone."""
        written, after = 0, None
        while True:
            page = await self.truth.floor_page(
                self.projector.aggregate_type, after, self.chunks.current
            )
            if not page:
                return written
            rows = await self.truth.rows_by_id(self.projector, [i for i, _ in page])
            at = datetime.now(UTC)
            ops = [
                IndexOp.from_document(self.target_index, self.projector.tombstone(i, rev, at=at))
                for i, rev in page
                if not _outranks(self.projector, rows.get(i), rev)
            ]
            indexed, _ = await self._write(ops, result)
            written += indexed
            after = page[-1][0]

    async def _prepare(
        self, after_id: str | None, size: int, ready: asyncio.Queue[_Prepared | Exception]
    ) -> _Prepared:
        """The next chunk after `after_id`. Yields the loop every `_YIELD_EVERY` rows (pausing
        while the writer has a chunk waiting), so the writer never waits behind projection."""
        rows = await self.truth.scan(self.projector, after_id, size, scope=self.scope)
        ops: list[IndexOp] = []
        failures: list[tuple[str, str]] = []
        for n, row in enumerate(rows, start=1):
            if n % _YIELD_EVERY == 0:
                await asyncio.sleep(_AHEAD_PAUSE_S if ready.qsize() else 0)
            try:
                document = self.projector.project(row)
            except PoisonMessage as exc:
                failures.append((str(row.get(self.projector.id_column)), exc.message))
                continue
            ops.append(IndexOp.from_document(self.target_index, document))
        last_id = self.projector.key_of(rows[-1]) if rows else ""
        return _Prepared(len(rows), last_id, ops, failures)  # the rows are freed here

    async def _write(
        self, ops: list[IndexOp], result: BackfillResult, retired: list[object] | None = None
    ) -> tuple[int, int]:
        """Write `ops`; (indexed, refused). Transient failures are retried, then raised. The
        outcome lists go to `retired` when given, to be freed later."""
        indexed = refused = 0
        failing: list[WriteOutcome] = []
        for attempt in range(_WRITE_ATTEMPTS):
            if attempt:
                await asyncio.sleep(_FIRST_RETRY_S * 2 ** (attempt - 1))
                ops = [outcome.op for outcome in failing]
            outcomes = await self.sink.write(ops)
            if retired is not None:
                retired.append(outcomes)
            failing = []
            for outcome in outcomes:
                if outcome.kind in _INDEXED:
                    indexed += 1
                elif outcome.code is not None and outcome.code.disposition is Disposition.POISON:
                    refused += 1
                    self._keep(result, outcome.op.doc_id, outcome.message or str(outcome.code))
                else:
                    failing.append(outcome)
            if not failing:
                return indexed, refused
        last = failing[-1]
        raise TransientError(
            last.code or ErrorCode.ES_UNEXPECTED,
            f"backfill into {self.target_index}: {len(failing)} writes still failing after "
            f"{_WRITE_ATTEMPTS} attempts ({last.message}); fix the cluster, then run the rebuild "
            "again with --resume",
        )

    @staticmethod
    def _keep(result: BackfillResult, doc_id: str, message: str) -> None:
        if len(result.failures) < _KEEP_FAILURES:
            result.failures.append((doc_id, message))


def _outranks(projector: Projector, row: Row | None, floor: int) -> bool:
    revision = None if row is None else projector.revision_of(row)
    return revision is not None and revision > floor


def backfill_chunks(settings: Settings) -> ChunkController:
    """The backfill's chunk sizes: the ``[rebuild]`` chunk settings, in whole bulks."""
    r = settings.rebuild
    return ChunkController(
        r.chunk_min,
        r.chunk_max,
        r.chunk_target_s,
        r.chunk_initial,
        r.chunk_max_step,
        quantum=settings.elasticsearch.bulk_max_actions,
    )
