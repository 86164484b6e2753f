"""`searchsync index load --type T`: the initial load of rows that exist before searchsync, into the
alias's write index while the live group runs (docs/design.md, invariant 18).

Per part, in order: the watermark (the type's topics' end offsets) is saved first, then the keyset
scan writes chunk after chunk through the rebuild's `Backfill` (same projector, truth reads, bulk
path and adaptive chunks), each document at its row's revision as the external version through the
alias: a live event always wins and a load never moves a document backwards (a 409 is a newer or
equal revision already there). Each finished chunk saves the part's position, so a killed load
continues after it. Last, the part waits until the live group committed past the watermark: every
change after the watermark is then the live group's, and it is past where the load began."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from searchsync.clock import utc_now
from searchsync.config import Settings
from searchsync.errors import LiveLagTooHigh, TransientError
from searchsync.kafka.admin import KafkaAdmin
from searchsync.mysql.key_scope import KeyScope, ranges
from searchsync.mysql.truth import Truth
from searchsync.ops.load.outcome import LoadOptions, LoadOutcome, load_key
from searchsync.ops.load.parts import LoadRecord, LoadStateStore, Status
from searchsync.ops.rebuild import plan as plans
from searchsync.ops.rebuild.backfill import Backfill, ChunkDone, backfill_chunks
from searchsync.ops.rebuild.catchup import live_group_passed
from searchsync.ops.rebuild.progress import Progress
from searchsync.ops.rebuild.records import watermark_keys
from searchsync.ops.repair.load import LagGuard, live_lag
from searchsync.projection import Projector, ProjectorRegistry
from searchsync.search.port import IndexAdmin, SearchEngine
from searchsync.search.sink import Sink


@dataclass(slots=True)
class Loader:
    """Runs one part of one load from its saved status to the end."""

    settings: Settings
    registry: ProjectorRegistry
    index_admin: IndexAdmin
    writer: SearchEngine  # through the alias (require_alias=true), as the live consumer writes
    truth: Truth
    kafka: KafkaAdmin
    state: LoadStateStore
    progress: Progress
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    async def run(self, options: LoadOptions) -> LoadOutcome:
        started = time.monotonic()
        projector = self.registry.get(options.aggregate_type)
        alias = self.settings.alias(options.aggregate_type)
        writer = await plans.write_index(self.index_admin, projector, alias, loading=True)
        key = load_key(writer.index, options.where, options.parts)
        records = await self.state.parts(key)
        stored = bool(records)
        if not stored:
            records = await self._plan(projector, alias, writer.index, key, options)
        record = records[options.part]
        if options.dry_run:
            return await self._planned(projector, alias, options, record, stored)
        if record.status is Status.DONE:
            if not options.again:
                message = (
                    f"{_name(record)} finished at {record.finished_at} ({record.rows_done} rows "
                    f"in {record.chunks_done} chunks): nothing to do; `--again` loads it again"
                )
                done = sum(r.status is Status.DONE for r in records)
                return LoadOutcome(True, "already_done", message, record, parts_done=done)
            unset = dict.fromkeys(("watermark", "last_id", "message", "finished_at"))
            record = await self._save(
                record, status=Status.PENDING, rows_done=0, rows_failed=0, chunks_done=0, **unset
            )
        outcome = LoadOutcome(False, "interrupted", "", record, resumed_after=record.last_id)
        try:
            await self._continue(projector, outcome, options)
        except (TransientError, LiveLagTooHigh) as exc:
            outcome.message = (
                f"{_name(record)} stopped: {exc}. The finished chunks are saved: run "
                "`searchsync index load` again with the same options to continue"
            )
        if not outcome.ok and outcome.record is not None:
            with contextlib.suppress(TransientError):  # a note for the next run; best effort
                outcome.record = await self._save(outcome.record, message=outcome.message)
        outcome.seconds = time.monotonic() - started
        outcome.parts_done = sum(r.status is Status.DONE for r in await self.state.parts(key))
        return outcome

    async def _plan(
        self, projector: Projector, alias: str, index: str, key: str, options: LoadOptions
    ) -> list[LoadRecord]:
        """Cut the rows into the load's key ranges and (unless a dry run) store every part; the
        stored parts (a concurrent process of the same load may have stored its own first)."""
        cuts = await self.truth.split_keys(projector, options.parts, options.where)
        now = utc_now()
        records = [
            LoadRecord(
                key,
                part,
                options.parts,
                projector.aggregate_type,
                alias,
                index,
                options.where,
                scope.low,
                scope.high,
                Status.PENDING,
                now,
            )
            for part, scope in enumerate(ranges(cuts))
        ]
        if options.dry_run:
            return records
        await self.state.plan(records)
        return await self.state.parts(key)

    async def _planned(
        self,
        projector: Projector,
        alias: str,
        options: LoadOptions,
        record: LoadRecord,
        stored: bool,
    ) -> LoadOutcome:
        """The dry run: what is left of the part `record` (not `stored`: not planned yet)."""
        scope = KeyScope(record.last_id or record.low_id, record.high_id, options.where)
        state = (
            f"{record.status.value}, {record.rows_done} rows done" if stored else "not planned yet"
        )
        rows = await self.truth.count(projector, scope)
        message = (
            f"would load part {options.part}/{options.parts} of {projector.table} into "
            f"{record.target_index} through alias {alias}: keys ({scope.low or '-inf'}, "
            f"{scope.high or '+inf'}], {rows} rows left ({state}); nothing was changed"
        )
        return LoadOutcome(True, "planned", message, record if stored else None, rows_in_scope=rows)

    async def _continue(
        self, projector: Projector, outcome: LoadOutcome, options: LoadOptions
    ) -> None:
        assert outcome.record is not None
        record, s, kind = outcome.record, self.settings, projector.aggregate_type
        if record.status is Status.PENDING:
            topics = await asyncio.to_thread(
                plans.type_topics, self.kafka, s, kind, must_exist=False
            )
            watermark = await asyncio.to_thread(plans.high_watermarks, self.kafka, topics)
            outcome.record = record = await self._save(
                record, status=Status.LOADING, watermark=watermark, started_at=utc_now()
            )
            self.progress.step(
                "watermark", f"{_name(record)}: watermark {watermark_keys(watermark)} recorded"
            )
        if record.status is Status.LOADING:
            if not await self._scan(projector, outcome, options):
                outcome.message = (
                    f"{_name(record)}: stopped after {options.stop_after_chunks} chunks;"
                    " run again to continue"
                )
                return
            outcome.record = record = await self._save(outcome.record, status=Status.SCANNED)
        note = "; --no-wait: the live group's pass of the watermark was not checked"
        if options.wait_for_live:
            passed = await live_group_passed(self.kafka, s, record.watermark or {}, self.sleep)
            if passed is None:
                outcome.action = "waiting"
                outcome.message = (
                    f"{_name(record)}: every row is written, but live group "
                    f"{self.settings.kafka.group_id} did not commit past the watermark "
                    f"{watermark_keys(record.watermark or {})} within "
                    f"{self.settings.load.live_wait_timeout_s:.0f}s: start `searchsync run` "
                    "(or let it catch up), then run the load again to finish"
                )
                return
            note = f"; {passed}"
        outcome.record = record = await self._save(
            record, status=Status.DONE, finished_at=utc_now(), message=None
        )
        outcome.ok = record.rows_failed == 0
        outcome.action = "done"
        failed = f", {record.rows_failed} rows could not be projected" if record.rows_failed else ""
        outcome.message = (
            f"loaded {_name(record)} into {record.target_index}: {outcome.rows_this_run} rows "
            f"this run, {record.rows_done} in all{failed}{note}"
        )

    async def _scan(self, projector: Projector, outcome: LoadOutcome, options: LoadOptions) -> bool:
        """The part's chunks after its last finished one; True when it reached the end."""
        assert outcome.record is not None
        first = outcome.record
        left = KeyScope(first.last_id or first.low_id, first.high_id, first.where)
        total = first.rows_done + await self.truth.count(projector, left)
        outcome.rows_in_scope = total
        self.progress.backfill(first.rows_done, total, first.rows_failed)

        async def on_chunk(chunk: ChunkDone) -> None:
            r = outcome.record
            assert r is not None
            outcome.record = r = await self._save(
                r,
                last_id=chunk.last_id,
                rows_done=r.rows_done + chunk.rows,
                rows_failed=r.rows_failed + chunk.failed,
                chunks_done=r.chunks_done + 1,
                runs=r.runs + (0 if outcome.rows_this_run else 1),
            )
            outcome.rows_this_run += chunk.rows
            self.progress.backfill(r.rows_done, total, r.rows_failed)

        s = self.settings
        guard = LagGuard(
            self._live_lag,
            max_lag=s.load.max_live_lag,
            timeout_s=s.load.lag_wait_timeout_s,
            poll_s=s.load.lag_poll_s,
            group=s.kafka.group_id,
            sleep=self.sleep,
            job="load",
        )
        checked = -math.inf

        async def lag_allows() -> None:
            """The guard before a chunk, at most once per ``load.lag_poll_s`` when it passes."""
            nonlocal checked
            if time.monotonic() - checked >= s.load.lag_poll_s:
                await guard.wait(f"the next chunk of {_name(first)}")
                checked = time.monotonic()

        result = await Backfill(
            truth=self.truth,
            sink=Sink(self.writer),
            projector=projector,
            target_index=first.alias,  # through the alias, as the live consumer writes
            chunks=backfill_chunks(s),
            on_chunk=on_chunk,
            scope=first.scope,
            before_chunk=lag_allows,
        ).run(after_id=first.last_id, stop_after_chunks=options.stop_after_chunks)
        r = outcome.record
        self.progress.backfill(r.rows_done, total, r.rows_failed, final=True)
        outcome.failures = result.failures
        for doc_id, why in result.failures:
            self.progress.step("load", f"not indexed: {doc_id}: {why}")
        return result.complete

    async def _live_lag(self) -> int:
        """The live group's lag while it has members; 0 without: a group that is not consuming
        has no live traffic to protect (and a new one's "lag" is the whole topic)."""
        if not await asyncio.to_thread(self.kafka.active_members, self.settings.kafka.group_id):
            return 0
        return await asyncio.to_thread(live_lag, self.kafka, self.settings)

    async def _save(self, record: LoadRecord, **changes: Any) -> LoadRecord:
        updated = dataclasses.replace(record, updated_at=utc_now(), **changes)
        await self.state.save(updated)
        return updated


def _name(record: LoadRecord) -> str:
    return f"part {record.part}/{record.parts} of the {record.aggregate_type} load"
