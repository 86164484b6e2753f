"""`searchsync rebuild --type T` (docs/design.md, Rebuild): watermark, new index, backfill, catch
up, restore the settings, verify, swap, hand over. Every step saves its status first, so
``--resume`` continues at the step it reached with the same watermark, target and group. With a
changed schema version the sweep has old-shape documents rewritten and the catch-up group writes
until the redeployed live group committed as far (unless ``--no-wait``)."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import InitVar, dataclass
from typing import Any

from searchsync.clock import utc_now
from searchsync.config import Settings
from searchsync.errors import InvalidRequest, OperationRefused
from searchsync.kafka.admin import KafkaAdmin
from searchsync.mysql.outbox import Outbox
from searchsync.mysql.truth import Truth
from searchsync.naming import parse_physical_name, read_alias_name
from searchsync.observability.rebuild_metrics import RebuildMetrics
from searchsync.ops.rebuild import plan as plans
from searchsync.ops.rebuild.backfill import Backfill, ChunkDone, backfill_chunks
from searchsync.ops.rebuild.catchup import CatchupGroup, CatchupRun
from searchsync.ops.rebuild.plan import RebuildOptions, RebuildOutcome
from searchsync.ops.rebuild.progress import Progress
from searchsync.ops.rebuild.records import RebuildRecord, RebuildStateStore, Status, watermark_keys
from searchsync.ops.rebuild.verify import VerifyReport, verify
from searchsync.projection import Projector, ProjectorRegistry
from searchsync.search.port import IndexAdmin, IndexInfo, SearchEngine
from searchsync.search.sink import Sink


@dataclass(kw_only=True)
class Rebuilder:
    """Runs one rebuild from its saved status to the end."""

    settings: Settings
    registry: ProjectorRegistry
    index_admin: IndexAdmin
    writer: SearchEngine  # require_alias=false: the one writer that addresses a physical index
    reader: SearchEngine
    truth: Truth
    kafka: KafkaAdmin
    state: RebuildStateStore
    catchup: InitVar[CatchupRun]  # runs the catch-up group's consumer
    metrics: RebuildMetrics
    progress: Progress
    outbox: InitVar[Outbox]  # takes the sweep's REBUILD events
    sleep: InitVar[Callable[[float], Awaitable[None]]] = asyncio.sleep

    def __post_init__(
        self, catchup: CatchupRun, outbox: Outbox, sleep: Callable[[float], Awaitable[None]]
    ) -> None:
        s, kafka, metrics, progress = self.settings, self.kafka, self.metrics, self.progress
        self.group = CatchupGroup(s, kafka, catchup, metrics, progress, self.reader, outbox, sleep)

    async def run(self, options: RebuildOptions) -> RebuildOutcome:
        projector = self.registry.get(options.aggregate_type)
        alias = self.settings.alias(options.aggregate_type)
        existing = await self.state.unfinished(alias)
        if options.abandon:
            return await self._abandon(alias, existing, options.dry_run)
        if options.dry_run:
            return await self._dry_run(projector, alias, existing)
        options.check(alias, existing)
        try:
            record = existing or await self._begin(projector, alias)
            if existing is not None:
                self.progress.step("resume", f"resuming {record.rebuild_id} at {record.status}")
            return await self._continue(projector, record, options)
        finally:
            await self.group.stop()

    async def save(self, record: RebuildRecord, **changes: Any) -> RebuildRecord:
        """Store `record` with `changes`, stamped (and marked finished by a final status)."""
        now = utc_now()
        finished_at = now if changes.get("status", record.status).finished else None
        updated = dataclasses.replace(record, updated_at=now, finished_at=finished_at, **changes)
        await self.state.save(updated)
        return updated

    async def _plan(self, projector: Projector, alias: str) -> plans.Plan:
        ports = self.kafka, self.index_admin, self.truth
        return await plans.make_plan(self.settings, *ports, projector, alias)

    async def _dry_run(
        self, projector: Projector, alias: str, existing: RebuildRecord | None
    ) -> RebuildOutcome:
        plan = await self._plan(projector, alias)
        if existing is not None:
            message = (
                f"alias {alias} has an unfinished rebuild into {existing.target_index} "
                f"({existing.status.value}): --resume would continue it; nothing was changed"
            )
        elif (why := plans.unloaded(plan, projector.table, self.settings)) is not None:
            return RebuildOutcome(False, "refused", f"{why}; nothing was changed", None, plan)
        else:
            message = (
                f"would rebuild {alias}: {plan.current_index} -> {plan.new_index} "
                f"({plan.rows} rows, catch-up group {plan.catchup_group}); nothing was changed"
            )
        return RebuildOutcome(True, "planned", message, existing, plan)

    async def _begin(self, projector: Projector, alias: str) -> RebuildRecord:
        plan = await self._plan(projector, alias)  # the watermark is taken here, first
        if (why := plans.unloaded(plan, projector.table, self.settings)) is not None:
            raise OperationRefused(why)
        record = plans.first_record(plan, uuid.uuid4().hex, utc_now())
        await self.state.create(record)
        marks = watermark_keys(plan.watermark)
        self.progress.step("watermark", f"watermark {marks} recorded", rebuild=record.rebuild_id)
        return record

    async def _continue(
        self, projector: Projector, record: RebuildRecord, options: RebuildOptions
    ) -> RebuildOutcome:
        failures: list[tuple[str, str]] = []
        if record.status is Status.BACKFILLING:
            if not await self.index_admin.exists(record.target_index):  # new, or saved just before
                await plans.create_index(self.index_admin, projector, record)
                self.progress.step("create", f"created {record.target_index} (bulk-load settings)")
            record, done, failures = await self._backfill(projector, record, options)
            if not done:
                message = f"stopped after {options.stop_after_chunks} chunks; run with --resume"
                return RebuildOutcome(False, "interrupted", message, record, failures=failures)
            await self.group.seed(record)
            record = await self.save(record, status=Status.CATCHING_UP)
        return await self._finish(projector, record, options, failures)

    async def _backfill(
        self, projector: Projector, record: RebuildRecord, options: RebuildOptions
    ) -> tuple[RebuildRecord, bool, list[tuple[str, str]]]:
        total = await self.truth.count(projector)
        current = record

        async def on_chunk(chunk: ChunkDone) -> None:
            nonlocal current
            current = await self.save(
                current,
                last_id=chunk.last_id,
                rows_done=current.rows_done + chunk.rows,
                rows_failed=current.rows_failed + chunk.failed,
            )
            self.metrics.chunk(
                current.alias, scanned=chunk.rows, indexed=chunk.indexed, failed=chunk.failed
            )
            self.progress.backfill(current.rows_done, total, current.rows_failed)

        result = await Backfill(
            truth=self.truth,
            sink=Sink(self.writer),
            projector=projector,
            target_index=record.target_index,
            chunks=backfill_chunks(self.settings),
            on_chunk=on_chunk,
        ).run(after_id=record.last_id, stop_after_chunks=options.stop_after_chunks)
        self.progress.backfill(current.rows_done, total, current.rows_failed, final=True)
        for doc_id, why in result.failures:
            self.progress.step("backfill", f"not indexed: {doc_id}: {why}")
        return current, result.complete, result.failures

    async def _finish(
        self,
        projector: Projector,
        record: RebuildRecord,
        options: RebuildOptions,
        failures: list[tuple[str, str]],
    ) -> RebuildOutcome:
        report: VerifyReport | None = None
        if record.status is not Status.SWAPPED:
            record, report = await self._verify_and_swap(projector, record)
            if not report.ok:
                message = (
                    f"refused to swap: {'; '.join(report.reasons)}. The alias still points at "
                    f"{record.source_index}; fix the cause, then `--resume` verifies again (or "
                    "`--abandon`)"
                )
                return RebuildOutcome(False, "refused", message, record, None, report, failures)
        await self.group.start(record)
        old = await self._source_info(record)
        old_version = None if old is None else old.schema_version
        target = await self.group.catch_up(record)  # the live group's writes to the old index
        live = self.settings.kafka.group_id
        changed = old_version is not None and old_version != projector.schema_version
        note = await self.group.sweep(projector, record) if changed else ""
        if changed and options.wait_for_live:
            self.progress.step(
                "handover",
                f"schema {old_version} -> {projector.schema_version}: the catch-up group keeps "
                f"writing until group {live}, redeployed with the new projector, catches up",
            )
            mine = await self.group.committed(record.catchup_group, sorted(target))
            try:
                await self.group.wait_until(record, live, mine)
            except OperationRefused as exc:
                message = (
                    f"{exc}. The alias points at {record.target_index}; the catch-up group "
                    f"{record.catchup_group} keeps its offsets. Redeploy `searchsync run` with "
                    "the new projector, then run the rebuild again with --resume to finish the "
                    "handover"
                )
                record = await self.save(record, message=message)
                return RebuildOutcome(False, "waiting", message, record, None, report, failures)
        elif changed:
            note += (
                f"; --no-wait: the index gets no new writes until group {live} runs the new "
                "projector (it continues from where it was fenced)"
            )
        await self.group.stop()
        deleted = await asyncio.to_thread(self.kafka.delete_group, record.catchup_group)
        record = await self.save(record, status=Status.DONE, message=None)
        message = (
            f"alias {record.alias} -> {record.target_index}; {record.source_index} kept "
            f"(drop it later with `searchsync index drop`); catch-up group "
            f"{record.catchup_group} {'deleted' if deleted else 'was already gone'}{note}"
        )
        return RebuildOutcome(True, "done", message, record, None, report, failures)

    async def _verify_and_swap(
        self, projector: Projector, record: RebuildRecord
    ) -> tuple[RebuildRecord, VerifyReport]:
        r, progress = self.settings.rebuild, self.progress
        await self.group.start(record)
        await self.group.catch_up(record)
        progress.step("catch-up", f"{record.catchup_group} reached the topics' end")
        previous = await self._source_info(record)
        refresh, replicas = plans.restored_settings(projector.mapping, previous)
        await self.index_admin.update_settings(
            record.target_index, refresh_interval=refresh, replicas=replicas
        )
        progress.step("settings", f"{record.target_index}: refresh {refresh}, replicas {replicas}")
        record = await self.save(record, status=Status.VERIFYING)
        report = VerifyReport()
        for attempt in range(1, r.verify_attempts + 1):
            if attempt > 1:  # concurrent writes make one measurement racy: catch up, measure again
                await self.group.catch_up(record)
            report = await verify(self.reader, self.truth, r, projector, record)
            self.metrics.set("v1_v2_query_diff_rate", record.alias, report.query_diff_rate)
            progress.step("verify", f"attempt {attempt}: {report.summary()}")
            if report.ok:
                break
        if not report.ok:
            reasons = "; ".join(report.reasons)
            return await self.save(record, status=Status.REFUSED, message=reasons), report
        # one _aliases call moves the write alias and its read alias (invariant 15)
        await self.index_admin.swap_alias(
            record.alias, old=record.source_index, new=record.target_index
        )
        record = await self.save(record, status=Status.SWAPPED, message=None)
        if (parsed := parse_physical_name(record.target_index)) is not None:
            self.metrics.set("alias_current_physical_index", record.alias, parsed[1])
        read = read_alias_name(record.alias)
        progress.step(
            "swap", f"alias {record.alias} and read alias {read} -> {record.target_index}"
        )
        return record, report

    async def _source_info(self, record: RebuildRecord) -> IndexInfo | None:
        found = await self.index_admin.list_indices(record.alias)
        return next((i for i in found if i.name == record.source_index), None)

    async def _abandon(
        self, alias: str, existing: RebuildRecord | None, dry_run: bool
    ) -> RebuildOutcome:
        if existing is None:
            raise InvalidRequest(f"no unfinished rebuild of {alias} to abandon")
        kept = f"{existing.target_index} is kept: drop it with `searchsync index drop`"
        if existing.status is Status.SWAPPED:
            kept = f"the alias already points at {existing.target_index}"
        if dry_run:
            message = f"would abandon rebuild {existing.rebuild_id}; {kept}"
            return RebuildOutcome(True, "planned", message, existing)
        record = await self.save(existing, status=Status.ABANDONED, message="abandoned")
        try:
            await asyncio.to_thread(self.kafka.delete_group, record.catchup_group)
        except Exception as exc:  # the group may still have members for a session timeout
            kept += f"; group {record.catchup_group} not deleted ({exc})"
        return RebuildOutcome(True, "abandoned", f"abandoned {record.rebuild_id}; {kept}", record)
