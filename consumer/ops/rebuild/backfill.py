"""The backfill: keyset-scan the truth, project each row, write it into the new physical index.

Each chunk is ``scan(projector, after_id, size)`` (never OFFSET), projected with the one
projector, written with external versions (a 409 at the same or a newer version is fine: the
document is already there), and only then reported through `on_chunk`, which persists the last
id. A crash between the write and the save repeats one chunk, which external versions make
harmless. Chunk sizes follow `ChunkController` (a target latency per chunk).

A row the projector refuses is counted as failed (and kept in `failures`, first few only);
verification decides whether that many failures still allow the swap. A write the cluster
refuses transiently is retried a few times with backoff, then raises `TransientError`: the
rebuild stops with its progress saved, and ``--resume`` continues.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final, Protocol

from consumer.errors import ErrorCode, PoisonMessage, TransientError
from consumer.ops.chunks import ChunkController
from consumer.projection import Projector, Row
from consumer.search.sink import IndexOp, OutcomeKind, Sink

__all__ = ["Backfill", "BackfillResult", "ChunkDone", "TruthScan"]

_WRITE_ATTEMPTS: Final = 5
_FIRST_RETRY_S: Final = 0.5
_KEEP_FAILURES: Final = 20


class TruthScan(Protocol):
    """What the rebuild reads from the truth (`consumer.mysql.truth.MysqlTruth` has it all)."""

    async def scan(self, projector: Projector, after_id: str | None, limit: int) -> list[Row]: ...

    async def count(self, projector: Projector) -> int: ...

    async def floor_page(
        self, aggregate_type: str, after_id: str | None, limit: int
    ) -> list[tuple[str, int]]: ...

    async def rows_by_id(
        self, projector: Projector, ids: list[str], *, primary: bool = False
    ) -> dict[str, Row]: ...

    async def revision_floors(
        self, aggregate_type: str, ids: list[str], *, primary: bool = False
    ) -> dict[str, int]: ...


@dataclass(frozen=True, slots=True)
class ChunkDone:
    """One chunk written: where the scan stands now."""

    last_id: str
    rows: int  # rows in this chunk
    indexed: int  # written now or found written
    failed: int
    seconds: float
    next_size: int


@dataclass(frozen=True, slots=True)
class _Prepared:
    rows: Sequence[Row]
    ops: list[IndexOp]
    failures: list[tuple[str, str]]  # (id, why) of the rows the projector refused


@dataclass(slots=True)
class BackfillResult:
    last_id: str | None
    rows_done: int
    rows_failed: int
    chunks: int = 0
    complete: bool = False  # False: stopped by `stop_after_chunks`
    tombstones: int = 0  # hard-deleted ids written as tombstones at their revision floor
    failures: list[tuple[str, str]] = field(default_factory=list)


class Backfill:
    def __init__(
        self,
        *,
        truth: TruthScan,
        sink: Sink,
        projector: Projector,
        target_index: str,
        chunks: ChunkController,
        on_chunk: Callable[[ChunkDone], Awaitable[None]],
        clock: Callable[[], float] = time.monotonic,
        pause: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._truth = truth
        self._sink = sink
        self._projector = projector
        self._target = target_index
        self._chunks = chunks
        self._on_chunk = on_chunk
        self._clock = clock
        self._pause = pause

    async def run(
        self,
        *,
        after_id: str | None,
        rows_done: int = 0,
        rows_failed: int = 0,
        stop_after_chunks: int | None = None,
    ) -> BackfillResult:
        """Scan from `after_id` to the end (or `stop_after_chunks` chunks, for drills).

        The next chunk is read and projected while the current one is being written, so MySQL
        and the projection overlap with Elasticsearch; progress (`on_chunk`, which persists the
        last id) still moves only after a chunk's writes are acknowledged."""
        result = BackfillResult(after_id, rows_done, rows_failed)
        last_done = self._clock()
        upcoming: asyncio.Task[_Prepared] | None = asyncio.ensure_future(
            self._prepare(result.last_id, self._chunks.current)
        )
        try:
            while upcoming is not None:
                chunk = await upcoming
                upcoming = None
                if not chunk.rows:
                    result.tombstones = await self._floor_tombstones(result)
                    result.complete = True
                    return result
                more = stop_after_chunks is None or result.chunks + 1 < stop_after_chunks
                if more:
                    upcoming = asyncio.ensure_future(
                        self._prepare(str(chunk.rows[-1]["id"]), self._chunks.current)
                    )
                for doc_id, message in chunk.failures:
                    self._keep(result, doc_id, message)
                indexed, refused = await self._write(chunk.ops, result)
                failed = len(chunk.failures) + refused
                now = self._clock()
                elapsed, last_done = now - last_done, now
                size = self._chunks.observe(elapsed)
                result.last_id = str(chunk.rows[-1]["id"])
                result.rows_done += len(chunk.rows)
                result.rows_failed += failed
                result.chunks += 1
                await self._on_chunk(
                    ChunkDone(result.last_id, len(chunk.rows), indexed, failed, elapsed, size)
                )
            return result
        finally:
            if upcoming is not None:
                upcoming.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await upcoming

    async def _floor_tombstones(self, result: BackfillResult) -> int:
        """Tombstones for the hard-deleted ids (`search_revision_floor`) at their floor: the new
        index then holds every delete the old one held, not only those after the watermark. An
        id created again holds a newer revision, so its tombstone is refused (a harmless 409).
        Idempotent: an interrupted rebuild writes them again on `--resume`."""
        written, after = 0, None
        while True:
            page = await self._truth.floor_page(
                self._projector.aggregate_type, after, self._chunks.current
            )
            if not page:
                return written
            at = datetime.now(UTC)
            ops = [
                IndexOp.from_document(self._target, self._projector.tombstone(i, rev, at=at))
                for i, rev in page
            ]
            indexed, _ = await self._write(ops, result)
            written += indexed
            after = page[-1][0]

    async def _prepare(self, after_id: str | None, size: int) -> _Prepared:
        """The next chunk after `after_id`: its rows, their index ops, the rows refused."""
        rows = await self._truth.scan(self._projector, after_id, size)
        ops: list[IndexOp] = []
        failures: list[tuple[str, str]] = []
        for row in rows:
            try:
                document = self._projector.project(row)
            except PoisonMessage as exc:
                failures.append((str(row.get("id")), exc.message))
                continue
            ops.append(IndexOp.from_document(self._target, document))
        return _Prepared(rows, ops, failures)

    async def _write(self, ops: list[IndexOp], result: BackfillResult) -> tuple[int, int]:
        """Write `ops`; (indexed, refused). Transient failures are retried, then raised."""
        indexed = refused = 0
        pending = ops
        delay = _FIRST_RETRY_S
        for attempt in range(1, _WRITE_ATTEMPTS + 1):
            retry: list[IndexOp] = []
            last: tuple[ErrorCode | None, str | None] = (None, None)
            for outcome in await self._sink.write(pending):
                if outcome.finished or outcome.kind is OutcomeKind.AHEAD:
                    indexed += 1  # AHEAD: the index holds a newer revision of this row
                elif outcome.kind is OutcomeKind.POISON:
                    refused += 1
                    self._keep(result, outcome.op.doc_id, outcome.message or str(outcome.code))
                else:
                    retry.append(outcome.op)
                    last = (outcome.code, outcome.message)
            if not retry:
                return indexed, refused
            if attempt == _WRITE_ATTEMPTS:
                code = last[0] or ErrorCode.ES_UNEXPECTED
                raise TransientError(
                    code,
                    f"backfill into {self._target}: {len(retry)} writes still failing after "
                    f"{attempt} attempts ({last[1]}); fix the cluster, then run the rebuild "
                    "again with --resume",
                )
            await self._pause(delay)
            delay *= 2
            pending = retry
        return indexed, refused  # pragma: no cover - the loop returns or raises

    @staticmethod
    def _keep(result: BackfillResult, doc_id: str, message: str) -> None:
        if len(result.failures) < _KEEP_FAILURES:
            result.failures.append((doc_id, message))
