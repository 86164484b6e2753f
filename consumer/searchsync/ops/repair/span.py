"""One scan of a span of buckets: `read` begins every bucket (a new generation each) and reads
them completely on both sides; `finish` compares, settles, heals and completes each. A failed
read reports nothing from any bucket of the span (invariant 13).

The stray sweep (`sweep`, invariant 13), once per type and rotation after the buckets: read the
documents outside the key space (at most `STRAY_CEILING`), join the misplaced ones, drop the ids
the buckets found, wait `settle_s` once and re-read the rest by id on both sides. A document still
outside its key with a row is a STRAY (REBUILD at the row's revision; one above it is counted
`ahead`, left alone); live without a row is an ORPHAN; a tombstone without a row is left alone. A
failed read reports nothing.

Healing goes through the outbox, never by writing Elasticsearch (invariant 9): each confirmed
finding becomes one REBUILD outbox event in its own small transaction, at most `appends_per_s`.
An orphan (live document at v, row gone) raises the id's revision floor to v + 1 first, so the
consumer writes a tombstone at v + 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime
from typing import Final

from searchsync.config import RepairSettings
from searchsync.errors import LiveLagTooHigh
from searchsync.mysql.outbox import Outbox
from searchsync.ops.repair.compare import compare, still_holding
from searchsync.ops.repair.generations import BucketState, Epoch, WheelState, ewma
from searchsync.ops.repair.load import LagGuard, TokenBucket
from searchsync.ops.repair.model import BucketReport, Finding, FindingKind, IndexEntry, StrayReport
from searchsync.ops.repair.reader import BucketEntries, SpanReader, key_of_id
from searchsync.projection import Projector

log = logging.getLogger(__name__)

STRAY_PAGE: Final = 1_000  # strays per page, and ids per settle re-read of the sweep
STRAY_CEILING: Final = 100_000  # strays outside the key space one sweep reads


@dataclass(slots=True)
class Healer:
    """Turns findings into rate-limited outbox appends (`dry_run`: none); with a `guard`, the
    live lag is checked before each batch of `batch_size` appends."""

    outbox: Outbox
    _: KW_ONLY
    appends_per_s: float
    dry_run: bool = False
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    guard: LagGuard | None = None
    batch_size: int = 100
    _pace: TokenBucket = field(init=False)

    def __post_init__(self) -> None:  # the rate and batch were checked with the settings
        self._pace = TokenBucket(self.appends_per_s, burst=1.0, sleep=self.sleep)

    async def heal(self, findings: list[Finding]) -> tuple[int, str | None]:
        """Append one REBUILD per id (several findings of one id share it); the count appended,
        and why it stopped early (the live lag stayed too high) or None."""
        if self.dry_run:
            return 0, None
        by_id: dict[tuple[str, str], Finding] = {}
        for f in findings:
            by_id.setdefault((f.aggregate_type, f.id), f)
        for n, f in enumerate(by_id.values()):
            if self.guard is not None and n % self.batch_size == 0:
                try:
                    await self.guard.wait(f"appending REBUILD events ({len(by_id) - n} to go)")
                except LiveLagTooHigh as exc:
                    return n, str(exc)
            await self._pace.take(1)
            if f.kind is FindingKind.ORPHAN:
                assert f.doc_version is not None
                await self.outbox.append_orphan(f.aggregate_type, f.id, f.doc_version + 1)
            else:
                assert f.row_revision is not None
                await self.outbox.append_rebuild(f.aggregate_type, f.id, f.row_revision)
        return len(by_id), None


@dataclass(slots=True)
class SpanRead:
    """A span begun and read: its buckets' reports so far and entries (None: the read failed,
    the reports say why), and the documents its ranges returned outside their keys."""

    priors: list[BucketState]
    reports: list[BucketReport]
    entries: dict[int, BucketEntries] | None
    read_s: float
    misplaced: dict[str, IndexEntry] = field(default_factory=dict)


@dataclass(slots=True)
class SpanScan:
    reader: SpanReader
    state: WheelState
    healer: Healer
    alias_for: Callable[[str], str]
    settings: RepairSettings
    clock: Callable[[], datetime]
    sleep: Callable[[float], Awaitable[None]]

    async def read(
        self, projector: Projector, epoch: Epoch, priors: Sequence[BucketState]
    ) -> SpanRead | str:
        """Once the live lag allows it (else why not), begin and read the span; a failed read is
        returned, not raised (`finish` reports it)."""
        t, where = projector.aggregate_type, ", ".join(str(p.bucket) for p in priors)
        try:
            await self.reader.limits.lag.wait(f"{t} buckets {where}")
        except LiveLagTooHigh as exc:
            return str(exc)
        generations = await self.state.begin_many(epoch, [p.bucket for p in priors])
        reports = [BucketReport(t, b, g, self._content(b, g)) for b, g in generations.items()]
        started = time.monotonic()
        misplaced: dict[str, IndexEntry] = {}
        try:
            entries = await self.reader.read(
                projector,
                self.alias_for(t),
                epoch.bucket_count,
                [r.bucket for r in reports],
                {r.bucket for r in reports if r.content_checked},
                misplaced,
            )
        except Exception as exc:  # a partial read: nothing from this span counts
            cause = exc.exceptions[0] if isinstance(exc, ExceptionGroup) else exc
            each_s = (time.monotonic() - started) / len(reports)
            for r in reports:
                r.interrupted, r.seconds = f"{type(cause).__name__}: {cause}", each_s
            log.warning("repair scan of buckets %s interrupted", list(generations), exc_info=cause)
            return SpanRead(list(priors), reports, None, 0.0)
        return SpanRead(list(priors), reports, entries, time.monotonic() - started, misplaced)

    async def finish(
        self, projector: Projector, epoch: Epoch, read: SpanRead
    ) -> list[BucketReport]:
        reports, read_s, entries = read.reports, read.read_s, read.entries
        if entries is None:  # the read failed: no bucket completes
            return reports
        total = sum(len(e.rows) + len(e.docs) for e in entries.values()) or 1
        candidates: list[Finding] = []
        bucket_of_id: dict[str, int] = {}
        for r in reports:
            e = entries[r.bucket]
            r.rows, r.docs = len(e.rows), len(e.docs)
            t0 = time.monotonic()
            found = compare(projector, e.rows, e.docs, content=r.content_checked, complete=True)
            r.candidates = len(found)
            r.seconds = read_s * (r.rows + r.docs) / total + time.monotonic() - t0
            candidates += found
            bucket_of_id.update((f.id, r.bucket) for f in found)
        t0 = time.monotonic()
        kept: dict[int, list[Finding]] = {r.bucket: [] for r in reports}
        if candidates:  # those still holding after settle_s, re-read by id on both sides
            await self.sleep(self.settings.settle_s)
            alias = self.alias_for(projector.aggregate_type)
            ids = sorted({f.id for f in candidates})
            rows, docs = await self.reader.by_ids(projector, alias, ids)
            for f in still_holding(projector, candidates, rows, docs):
                kept[bucket_of_id[f.id]].append(f)  # the settle may re-type a finding, not move it
        settle_s = (time.monotonic() - t0) / len(reports)
        done: list[BucketState] = []  # completed together, one transaction
        for n, (prior, r) in enumerate(zip(read.priors, reports, strict=True)):
            t0 = time.monotonic()
            r.appended, stopped = await self.healer.heal(kept[r.bucket])
            if stopped is not None:  # not completed: scanned again next time
                for rest in reports[n:]:
                    rest.interrupted = rest.stopped = stopped
                break
            r.findings = kept[r.bucket]
            r.seconds += settle_s + time.monotonic() - t0
            done.append(self._completed(prior, r))
        await self.state.complete_many(epoch, done)
        return reports

    def _content(self, bucket: int, generation: int) -> bool:
        share = self.settings.content_share
        return share >= 1.0 or zlib.crc32(f"{bucket}:{generation}".encode()) / 2**32 < share

    def _completed(self, prior: BucketState, r: BucketReport) -> BucketState:
        return BucketState(
            bucket=prior.bucket,
            generation=r.generation,
            running_generation=r.generation,
            last_complete_at=self.clock(),
            drift_ewma=ewma(
                prior.drift_ewma, len(r.findings) / max(r.rows, 1), self.settings.ewma_alpha
            ),
            last_counts=dict(Counter(f.kind.value for f in r.findings)),
            cost_s=r.seconds,
            rows_seen=r.rows,
        )

    async def sweep(
        self, projector: Projector, misplaced: Mapping[str, IndexEntry], found: Collection[str]
    ) -> StrayReport:
        """Read, settle, confirm and heal the strays of one type; `found`: the ids the buckets of
        this rotation found already (their heal rewrites the whole document)."""
        report = StrayReport(projector.aggregate_type, misplaced=len(misplaced))
        alias = self.alias_for(projector.aggregate_type)
        started = time.monotonic()
        try:
            outside: set[str] = set()  # the documents outside the key space, at most the ceiling
            async with contextlib.aclosing(self.reader.index.strays(alias, STRAY_PAGE)) as pages:
                async for page in pages:
                    await self.reader.limits.es_requests.take(1)
                    outside.update(d.doc_id for d in page)
                    if len(outside) >= STRAY_CEILING:
                        report.truncated = True
                        break
            report.outside = len(outside)
            ids = sorted((outside | misplaced.keys()) - set(found))
            report.candidates = len(ids)
            if ids:
                await self.sleep(self.settings.settle_s)
            findings = await self._confirm(projector, alias, ids, report)
        except Exception as exc:  # a partial read: nothing from it counts
            report.interrupted = f"{type(exc).__name__}: {exc}"
            log.warning("repair sweep of %s strays interrupted", alias, exc_info=exc)
        else:
            report.appended, report.stopped = await self.healer.heal(findings)
            if report.stopped is None:
                report.findings = findings
        report.seconds = time.monotonic() - started
        return report

    async def _confirm(
        self, projector: Projector, alias: str, ids: Sequence[str], report: StrayReport
    ) -> list[Finding]:
        """The findings of `ids`, re-read by id on both sides `STRAY_PAGE` ids at a time."""
        t, key = projector.aggregate_type, key_of_id(projector.aggregate_type)
        out: list[Finding] = []
        for n in range(0, len(ids), STRAY_PAGE):
            rows, docs = await self.reader.by_ids(projector, alias, ids[n : n + STRAY_PAGE])
            for i in ids[n : n + STRAY_PAGE]:
                doc, row = docs.get(i), rows.get(i)
                stored = None if doc is None or doc.source is None else doc.source.get("sync_hash")
                if doc is None or stored == key(i):
                    continue  # gone, or written in its key range since: the buckets see it
                detail = f"sync_hash {stored} outside the key range of {key(i)}"
                if row is None:
                    if not doc.is_deleted:
                        out.append(Finding(FindingKind.ORPHAN, t, i, None, doc.version, detail))
                elif doc.version > row.revision:
                    report.ahead += 1
                else:
                    out.append(Finding(FindingKind.STRAY, t, i, row.revision, doc.version, detail))
        return out
