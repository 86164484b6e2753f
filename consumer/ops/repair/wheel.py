"""The wheel: scan buckets, compare, settle, heal, commit the generation (docs/design.md,
"Repair").

One bucket scan: `begin` (generation g = committed + 1), read the bucket's whole key range on
MySQL and on Elasticsearch in adaptive pages, compare (`consumer.ops.repair.compare`), wait
`settle_s` and re-read every candidate by id on both sides (a change still in flight is not
drift: only findings that hold again count), heal them through the outbox, then `complete`
with the counts, cost and EWMA. A scan that fails on either side reports nothing from that
bucket (no deletion finding from a partial read, invariant 13) and leaves it to be started
again from its first key. Content (``_source`` and the row's projection) is checked on a share
`content_share` of the buckets per rotation; revisions and flags on every scan.

Load (`consumer.ops.repair.load`): every MySQL page pays its rows into a rows/s bucket, every
Elasticsearch request into a requests/s bucket, and before each bucket the live group's lag is
checked (`LagGuard`); a lag that stays too high stops the rotation (`RotationReport.stopped`).
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from consumer.mysql.pool import utc_now
from consumer.ops.chunks import ChunkController
from consumer.ops.repair.buckets import WHEEL_CANONICALIZATION_VERSION, bucket_range
from consumer.ops.repair.compare import compare
from consumer.ops.repair.heal import Healer
from consumer.ops.repair.load import Limits, LiveLagTooHigh
from consumer.ops.repair.model import Finding, FindingKind, IndexEntry, TruthEntry
from consumer.ops.repair.schedule import Choice, SchedulePolicy, choose, ewma
from consumer.ops.repair.sides import IndexSide, TruthSide
from consumer.ops.repair.state import BucketState, Epoch, WheelState, ensure_epoch
from consumer.projection import Projector

__all__ = ["BucketReport", "RotationReport", "Wheel", "WheelConfig"]

log = logging.getLogger(__name__)
_E = TypeVar("_E", TruthEntry, IndexEntry)


@dataclass(frozen=True, slots=True)
class WheelConfig:
    bucket_count: int = 64
    page_size: int = 500
    page_min: int = 50
    page_max: int = 5_000
    page_target_s: float = 0.2
    content_share: float = 0.1
    settle_s: float = 10.0
    policy: SchedulePolicy = field(default_factory=SchedulePolicy)


@dataclass(slots=True)
class BucketReport:
    aggregate_type: str
    bucket: int
    generation: int
    content_checked: bool
    rows: int = 0
    docs: int = 0
    candidates: int = 0
    findings: list[Finding] = field(default_factory=list)
    appended: int = 0
    seconds: float = 0.0
    interrupted: str | None = None
    stopped: str | None = None  # the live lag stayed too high while healing


@dataclass(slots=True)
class RotationReport:
    epochs: dict[str, Epoch] = field(default_factory=dict)
    new_epochs: list[str] = field(default_factory=list)
    buckets: list[BucketReport] = field(default_factory=list)
    choices: list[tuple[str, Choice]] = field(default_factory=list)
    seconds: float = 0.0
    oldest_age_s: dict[str, float] = field(default_factory=dict)
    stopped: str | None = None  # why the rotation ended early (the live lag stayed too high)

    def counts(self) -> dict[str, int]:
        c: Counter[str] = Counter({k.value: 0 for k in FindingKind})
        for b in self.buckets:
            c.update(f.kind.value for f in b.findings)
        return dict(c)

    @property
    def interrupted(self) -> int:
        return sum(1 for b in self.buckets if b.interrupted is not None)


class Wheel:
    def __init__(
        self,
        *,
        projectors: Sequence[Projector],
        alias_for: Callable[[str], str],
        truth: TruthSide,
        index: IndexSide,
        state: WheelState,
        healer: Healer,
        config: WheelConfig,
        clock: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        progress: Callable[[BucketReport, int, int], None] | None = None,
        limits: Limits | None = None,
    ) -> None:
        self._projectors = list(projectors)
        self._alias_for = alias_for
        self._truth = truth
        self._index = index
        self._state = state
        self._healer = healer
        self._config = config
        self._clock = clock
        self._sleep = sleep
        self._progress = progress
        self._limits = limits or Limits()

    async def rotation(self, limit: int | None = None) -> RotationReport:
        """Scan every bucket of every type once (or the `limit` best per type), by priority."""
        started = time.monotonic()
        report = RotationReport()
        for projector in self._projectors:
            epoch, new = await ensure_epoch(
                self._state,
                projector.aggregate_type,
                self._config.bucket_count,
                WHEEL_CANONICALIZATION_VERSION,
                self._clock(),
            )
            report.epochs[projector.aggregate_type] = epoch
            if new:
                report.new_epochs.append(projector.aggregate_type)
            states = await self._state.buckets(epoch)
            now = self._clock()
            picked = choose(states.values(), now, self._config.policy, limit or len(states))
            for n, choice in enumerate(picked, 1):
                report.choices.append((projector.aggregate_type, choice))
                try:
                    await self._limits.lag.wait(
                        f"{projector.aggregate_type} bucket {choice.bucket}"
                    )
                except LiveLagTooHigh as exc:
                    report.stopped = str(exc)
                    break
                bucket = await self.scan_bucket(projector, epoch, states[choice.bucket])
                report.buckets.append(bucket)
                if self._progress is not None:
                    self._progress(bucket, n, len(picked))
                if bucket.stopped is not None:
                    report.stopped = bucket.stopped
                    break
            after = await self._state.buckets(epoch)
            report.oldest_age_s[projector.aggregate_type] = max(
                (
                    self._config.policy.max_staleness_s
                    if s.last_complete_at is None
                    else (self._clock() - s.last_complete_at).total_seconds()
                )
                for s in after.values()
            )
            if report.stopped is not None:
                break
        report.seconds = time.monotonic() - started
        return report

    def _content(self, bucket: int, generation: int) -> bool:
        share = self._config.content_share
        if share >= 1.0:
            return True
        return zlib.crc32(f"{bucket}:{generation}".encode()) / 2**32 < share

    async def scan_bucket(
        self, projector: Projector, epoch: Epoch, prior: BucketState
    ) -> BucketReport:
        generation = await self._state.begin(epoch, prior.bucket)
        content = self._content(prior.bucket, generation)
        report = BucketReport(projector.aggregate_type, prior.bucket, generation, content)
        started = time.monotonic()
        alias = self._alias_for(projector.aggregate_type)
        lo, hi = bucket_range(prior.bucket, epoch.bucket_count)
        try:
            rows = await self._read_truth(projector, lo, hi, content)
            docs = await self._read_index(alias, lo, hi, content)
        except Exception as exc:  # a partial read: nothing from this bucket counts
            report.interrupted = f"{type(exc).__name__}: {exc}"
            report.seconds = time.monotonic() - started
            log.warning("repair scan of bucket %s interrupted", prior.bucket, exc_info=True)
            return report
        report.rows, report.docs = len(rows), len(docs)
        candidates = compare(projector, rows, docs, content=content, complete=True)
        report.candidates = len(candidates)
        findings = await self._settle(projector, alias, candidates)
        appended_before = self._healer.appended
        try:
            report.appended = await self._healer.heal(findings)
        except LiveLagTooHigh as exc:  # not completed: the bucket is scanned again next time
            report.appended = self._healer.appended - appended_before
            report.interrupted = report.stopped = str(exc)
            report.seconds = time.monotonic() - started
            return report
        report.findings = findings
        report.seconds = time.monotonic() - started
        rate = len(report.findings) / max(len(rows), 1)
        counts = Counter(f.kind.value for f in report.findings)
        await self._state.complete(
            epoch,
            BucketState(
                bucket=prior.bucket,
                generation=generation,
                running_generation=generation,
                last_complete_at=self._clock(),
                drift_ewma=ewma(prior.drift_ewma, rate, self._config.policy.alpha),
                last_counts=dict(counts),
                cost_s=report.seconds,
                rows_seen=len(rows),
            ),
        )
        return report

    async def _settle(
        self, projector: Projector, alias: str, candidates: list[Finding]
    ) -> list[Finding]:
        """The candidates that still hold after `settle_s`, re-read by id on both sides.

        A missing or stale document counts only if, after the settle delay, it has still not
        reached the revision first seen (a row that keeps changing is in flight, not drift); an
        orphan only if its row is still gone; the same-revision kinds only if they recur."""
        if not candidates:
            return []
        await self._sleep(self._config.settle_s)
        ids = sorted({f.id for f in candidates})
        rows = await self._truth.by_ids(projector, ids)
        await self._limits.mysql_rows.take(len(ids))
        await self._limits.es_requests.take(1)
        docs = await self._index.by_ids(alias, ids)
        again = {
            (f.kind, f.id): f for f in compare(projector, rows, docs, content=True, complete=True)
        }
        kept: list[Finding] = []
        for f in candidates:
            row, doc = rows.get(f.id), docs.get(f.id)
            if f.kind in (FindingKind.MISSING, FindingKind.STALE):
                behind = doc is None or (
                    f.row_revision is not None and doc.version < f.row_revision
                )
                if row is not None and behind and (doc is not None or not row.deleted):
                    kind = FindingKind.MISSING if doc is None else FindingKind.STALE
                    kept.append(
                        Finding(
                            kind,
                            f.aggregate_type,
                            f.id,
                            row.revision,
                            None if doc is None else doc.version,
                            f.detail,
                        )
                    )
            elif f.kind is FindingKind.ORPHAN:
                if row is None and doc is not None and not doc.is_deleted:
                    kept.append(Finding(f.kind, f.aggregate_type, f.id, None, doc.version))
            elif (f.kind, f.id) in again:
                kept.append(again[(f.kind, f.id)])
        return kept

    async def _read_truth(
        self, projector: Projector, lo: int, hi: int, content: bool
    ) -> dict[str, TruthEntry]:
        async def page(after: str | None, n: int) -> list[TruthEntry]:
            found = await self._truth.bucket_page(projector, lo, hi, after, n, content=content)
            await self._limits.mysql_rows.take(len(found))
            return found

        return await self._pages(page)

    async def _read_index(
        self, alias: str, lo: int, hi: int, content: bool
    ) -> dict[str, IndexEntry]:
        async def page(after: str | None, n: int) -> list[IndexEntry]:
            await self._limits.es_requests.take(1)
            return await self._index.bucket_page(alias, lo, hi, after, n, content=content)

        return await self._pages(page)

    async def _pages(self, page: Callable[[str | None, int], Awaitable[list[_E]]]) -> dict[str, _E]:
        """Every entry of a key range, keyset by id in adaptive pages, to the end."""
        out: dict[str, _E] = {}
        chunks = self._chunks()
        after: str | None = None
        while True:
            size = chunks.current
            t0 = time.monotonic()
            found = await page(after, size)
            chunks.observe(time.monotonic() - t0)
            out.update((e.id, e) for e in found)
            if len(found) < size:
                return out
            after = found[-1].id

    def _chunks(self) -> ChunkController:
        c = self._config
        return ChunkController(
            minimum=c.page_min,
            maximum=c.page_max,
            target_s=c.page_target_s,
            current=c.page_size,
            max_step=4.0,
        )
