"""One scan of a span of buckets (docs/design.md, "Repair"): `read` begins every bucket (a new
generation each) and reads them completely on both sides; `finish` compares, settles, heals and
completes each. A failed read reports nothing from any bucket of the span (invariant 13).
"""

from __future__ import annotations

import logging
import time
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from searchsync.mysql.truth import Truth
from searchsync.ops.repair.compare import compare, still_holding
from searchsync.ops.repair.heal import Healer
from searchsync.ops.repair.load import Limits, LiveLagTooHigh
from searchsync.ops.repair.model import Finding, IndexEntry
from searchsync.ops.repair.reader import BucketEntries, SpanReader
from searchsync.ops.repair.report import BucketReport
from searchsync.ops.repair.schedule import ewma
from searchsync.ops.repair.sides import IndexSide, truth_by_ids
from searchsync.ops.repair.state import BucketState, Epoch, WheelState
from searchsync.projection import Projector

__all__ = ["SpanRead", "SpanScan"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class SpanRead:
    """A span begun and read: its buckets' reports so far and entries (None: the read failed,
    with `error`), and the documents its ranges returned outside their keys (`misplaced`)."""

    priors: list[BucketState]
    reports: list[BucketReport]
    entries: dict[int, BucketEntries] | None
    error: BaseException | None
    read_s: float
    misplaced: dict[str, IndexEntry] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class SpanScan:
    reader: SpanReader
    truth: Truth
    index: IndexSide
    state: WheelState
    healer: Healer
    limits: Limits
    alias_for: Callable[[str], str]
    content_share: float
    settle_s: float
    alpha: float
    clock: Callable[[], datetime]
    sleep: Callable[[float], Awaitable[None]]

    async def read(
        self, projector: Projector, epoch: Epoch, priors: Sequence[BucketState]
    ) -> SpanRead:
        """Begin every bucket of the span (a new generation each) and read them completely on
        both sides; a failed read is returned, not raised (`finish` reports it)."""
        reports: list[BucketReport] = []
        generations = await self.state.begin_many(epoch, [p.bucket for p in priors])
        for prior in priors:
            generation = generations[prior.bucket]
            content = self._content(prior.bucket, generation)
            reports.append(
                BucketReport(projector.aggregate_type, prior.bucket, generation, content)
            )
        started = time.monotonic()
        misplaced: dict[str, IndexEntry] = {}
        try:
            entries = await self.reader.read(
                projector,
                self.alias_for(projector.aggregate_type),
                epoch.bucket_count,
                [r.bucket for r in reports],
                {r.bucket for r in reports if r.content_checked},
                misplaced,
            )
        except Exception as exc:  # a partial read: nothing from this span counts
            cause = exc.exceptions[0] if isinstance(exc, ExceptionGroup) else exc
            return SpanRead(list(priors), reports, None, cause, time.monotonic() - started)
        elapsed = time.monotonic() - started
        return SpanRead(list(priors), reports, entries, None, elapsed, misplaced)

    async def finish(
        self, projector: Projector, epoch: Epoch, read: SpanRead
    ) -> list[BucketReport]:
        """Compare, settle, heal and complete each bucket of a span read (invariant 13: a failed
        read completes none)."""
        reports, read_s, priors = read.reports, read.read_s, read.priors
        entries = read.entries
        if entries is None:
            cause = read.error
            for r in reports:
                r.interrupted = f"{type(cause).__name__}: {cause}"
                r.seconds = read_s / len(reports)
            log.warning(
                "repair scan of buckets %s interrupted",
                [r.bucket for r in reports],
                exc_info=cause,
            )
            return reports
        alias = self.alias_for(projector.aggregate_type)
        total = sum(len(e.rows) + len(e.docs) for e in entries.values()) or 1
        candidates: dict[int, list[Finding]] = {}
        for r in reports:
            e = entries[r.bucket]
            r.rows, r.docs = len(e.rows), len(e.docs)
            r.seconds = read_s * (r.rows + r.docs) / total
            t0 = time.monotonic()
            candidates[r.bucket] = compare(
                projector, e.rows, e.docs, content=r.content_checked, complete=True
            )
            r.candidates = len(candidates[r.bucket])
            r.seconds += time.monotonic() - t0
        t0 = time.monotonic()
        settled = await self._settle(
            projector, alias, [f for r in reports for f in candidates[r.bucket]]
        )
        bucket_of_id = {f.id: r.bucket for r in reports for f in candidates[r.bucket]}
        kept: dict[int, list[Finding]] = {r.bucket: [] for r in reports}
        for f in settled:  # the settle may re-type a finding (missing <-> stale), not move it
            kept[bucket_of_id[f.id]].append(f)
        settle_s = (time.monotonic() - t0) / len(reports)
        done: list[BucketState] = []  # completed together, one transaction
        for n, (prior, r) in enumerate(zip(priors, reports, strict=True)):
            t0 = time.monotonic()
            findings = kept[r.bucket]
            appended_before = self.healer.appended
            try:
                r.appended = await self.healer.heal(findings)
            except LiveLagTooHigh as exc:  # not completed: scanned again next time
                r.appended = self.healer.appended - appended_before
                for rest in reports[n:]:
                    rest.interrupted = rest.stopped = str(exc)
                break
            r.findings = findings
            r.seconds += settle_s + time.monotonic() - t0
            done.append(self._completed(prior, r))
        await self.state.complete_many(epoch, done)
        return reports

    def _content(self, bucket: int, generation: int) -> bool:
        share = self.content_share
        if share >= 1.0:
            return True
        return zlib.crc32(f"{bucket}:{generation}".encode()) / 2**32 < share

    def _completed(self, prior: BucketState, r: BucketReport) -> BucketState:
        rate = len(r.findings) / max(r.rows, 1)
        return BucketState(
            bucket=prior.bucket,
            generation=r.generation,
            running_generation=r.generation,
            last_complete_at=self.clock(),
            drift_ewma=ewma(prior.drift_ewma, rate, self.alpha),
            last_counts=dict(Counter(f.kind.value for f in r.findings)),
            cost_s=r.seconds,
            rows_seen=r.rows,
        )

    async def _settle(
        self, projector: Projector, alias: str, candidates: list[Finding]
    ) -> list[Finding]:
        """The candidates that still hold after `settle_s`, re-read by id on both sides
        (`compare.still_holding`).
        """
        if not candidates:
            return []
        await self.sleep(self.settle_s)
        ids = sorted({f.id for f in candidates})
        rows = await truth_by_ids(self.truth, projector, ids)
        await self.limits.mysql_rows.take(len(ids))
        await self.limits.es_requests.take(1)
        docs = await self.index.by_ids(alias, ids)
        return still_holding(projector, candidates, rows, docs)
