"""The wheel: scan buckets, compare, settle, heal, commit the generation (docs/design.md,
"Repair").

One scan covers a span of buckets (consecutive picks, `span_buckets` / `span_rows`): `begin`
each (generation g = committed + 1), read them completely on MySQL and on Elasticsearch
(`consumer.ops.repair.reader`: adjacent buckets in one key range, both sides at once), compare
each (`consumer.ops.repair.compare`), wait `settle_s` once and re-read every candidate by id on
both sides (a change still in flight is not drift: only findings that hold again count), heal
them through the outbox, then `complete` each with its counts, cost and EWMA. A read that fails
on either side reports nothing from any bucket of the span (no deletion finding from a partial
read, invariant 13) and leaves each to be started again from its first key. Content (``_source``
and the row's projection) is checked on a share `content_share` of the buckets per rotation;
revisions and flags on every scan.

Load (`consumer.ops.repair.load`): every MySQL page pays its rows into a rows/s bucket, every
Elasticsearch request into a requests/s bucket, and before each span the live group's lag is
checked (`LagGuard`); a lag that stays too high stops the rotation (`RotationReport.stopped`).
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from consumer.mysql.pool import utc_now
from consumer.ops.chunks import ChunkController
from consumer.ops.repair.buckets import WHEEL_CANONICALIZATION_VERSION
from consumer.ops.repair.compare import compare, still_holding
from consumer.ops.repair.heal import Healer
from consumer.ops.repair.load import Limits, LiveLagTooHigh
from consumer.ops.repair.model import Finding
from consumer.ops.repair.reader import SpanReader
from consumer.ops.repair.report import BucketReport, RotationReport
from consumer.ops.repair.schedule import Choice, SchedulePolicy, choose, ewma
from consumer.ops.repair.sides import IndexSide, TruthSide
from consumer.ops.repair.state import BucketState, Epoch, WheelState, ensure_epoch
from consumer.projection import Projector

__all__ = ["Wheel", "WheelConfig"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WheelConfig:
    bucket_count: int = 64
    page_size: int = 500
    page_min: int = 50
    page_max: int = 5_000
    page_target_s: float = 0.2
    content_share: float = 0.1
    settle_s: float = 10.0
    # Elasticsearch pages of this fixed size (None: adaptive, as MySQL's): a range query costs
    # its whole key range whatever the page, so fewer, larger pages cost less
    index_page_size: int | None = None
    span_buckets: int = 32  # buckets read together (adjacent ones in one key range)
    span_rows: int = 50_000  # ... and at most this many rows by their last scans (>= 1 bucket)
    policy: SchedulePolicy = field(default_factory=SchedulePolicy)


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
        self._reader = SpanReader(
            truth,
            index,
            self._limits,
            self._chunks(),
            self._chunks(config.index_page_size),
            self._chunks(),
        )

    async def rotation(self, limit: int | None = None) -> RotationReport:
        """Scan every bucket of every type once (or the `limit` best per type), by priority, a
        span of consecutive picks at a time."""
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
            n = 0
            for span in self._spans(picked, states):
                report.choices.extend((projector.aggregate_type, c) for c in span)
                where = ", ".join(str(c.bucket) for c in span)
                try:
                    await self._limits.lag.wait(f"{projector.aggregate_type} buckets {where}")
                except LiveLagTooHigh as exc:
                    report.stopped = str(exc)
                    break
                scanned = await self.scan_span(projector, epoch, [states[c.bucket] for c in span])
                for bucket in scanned:
                    n += 1
                    report.buckets.append(bucket)
                    if self._progress is not None:
                        self._progress(bucket, n, len(picked))
                    if bucket.stopped is not None:
                        report.stopped = bucket.stopped
                if report.stopped is not None:
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

    def _spans(
        self, picked: Sequence[Choice], states: Mapping[int, BucketState]
    ) -> Iterator[list[Choice]]:
        """Consecutive picks, at most `span_buckets` and (by their last scans) `span_rows` rows
        per span, at least one."""
        span: list[Choice] = []
        rows = 0
        for choice in picked:
            seen = states[choice.bucket].rows_seen or 0
            if span and (
                len(span) >= self._config.span_buckets or rows + seen > self._config.span_rows
            ):
                yield span
                span, rows = [], 0
            span.append(choice)
            rows += seen
        if span:
            yield span

    def _content(self, bucket: int, generation: int) -> bool:
        share = self._config.content_share
        if share >= 1.0:
            return True
        return zlib.crc32(f"{bucket}:{generation}".encode()) / 2**32 < share

    async def scan_bucket(
        self, projector: Projector, epoch: Epoch, prior: BucketState
    ) -> BucketReport:
        """One bucket on its own: a span of one."""
        [report] = await self.scan_span(projector, epoch, [prior])
        return report

    async def scan_span(
        self, projector: Projector, epoch: Epoch, priors: Sequence[BucketState]
    ) -> list[BucketReport]:
        """Begin every bucket of the span (a new generation each), read them completely on both
        sides, then compare, settle, heal and complete each. A failed read interrupts them all
        (nothing counts, each is scanned again from its first key: invariant 13)."""
        reports: list[BucketReport] = []
        generations = await self._state.begin_many(epoch, [p.bucket for p in priors])
        for prior in priors:
            generation = generations[prior.bucket]
            content = self._content(prior.bucket, generation)
            reports.append(
                BucketReport(projector.aggregate_type, prior.bucket, generation, content)
            )
        started = time.monotonic()
        alias = self._alias_for(projector.aggregate_type)
        try:
            entries = await self._reader.read(
                projector,
                alias,
                epoch.bucket_count,
                [r.bucket for r in reports],
                {r.bucket for r in reports if r.content_checked},
            )
        except Exception as exc:  # a partial read: nothing from this span counts
            cause = exc.exceptions[0] if isinstance(exc, ExceptionGroup) else exc
            read_s = time.monotonic() - started
            for r in reports:
                r.interrupted = f"{type(cause).__name__}: {cause}"
                r.seconds = read_s / len(reports)
            log.warning(
                "repair scan of buckets %s interrupted",
                [r.bucket for r in reports],
                exc_info=True,
            )
            return reports
        read_s = time.monotonic() - started
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
            appended_before = self._healer.appended
            try:
                r.appended = await self._healer.heal(findings)
            except LiveLagTooHigh as exc:  # not completed: scanned again next time
                r.appended = self._healer.appended - appended_before
                for rest in reports[n:]:
                    rest.interrupted = rest.stopped = str(exc)
                break
            r.findings = findings
            r.seconds += settle_s + time.monotonic() - t0
            done.append(self._completed(prior, r))
        await self._state.complete_many(epoch, done)
        return reports

    def _completed(self, prior: BucketState, r: BucketReport) -> BucketState:
        rate = len(r.findings) / max(r.rows, 1)
        return BucketState(
            bucket=prior.bucket,
            generation=r.generation,
            running_generation=r.generation,
            last_complete_at=self._clock(),
            drift_ewma=ewma(prior.drift_ewma, rate, self._config.policy.alpha),
            last_counts=dict(Counter(f.kind.value for f in r.findings)),
            cost_s=r.seconds,
            rows_seen=r.rows,
        )

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
        return still_holding(projector, candidates, rows, docs)

    def _chunks(self, fixed: int | None = None) -> ChunkController:
        c = self._config
        if fixed is not None:
            return ChunkController(
                minimum=fixed, maximum=fixed, target_s=c.page_target_s, current=fixed
            )
        return ChunkController(
            minimum=c.page_min,
            maximum=c.page_max,
            target_s=c.page_target_s,
            current=c.page_size,
            max_step=4.0,
        )
