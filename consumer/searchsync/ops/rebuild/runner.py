"""`searchsync rebuild --type T`: the steps in their order (docs/design.md, Rebuild): watermark, new
index, backfill, then `finish`. Every step saves its status first, so ``--resume`` continues at the
step it reached with the same watermark, target and group."""

from __future__ import annotations

import asyncio
import uuid

from searchsync import naming
from searchsync.clock import utc_now
from searchsync.config import Settings
from searchsync.errors import InvalidRequest, OperationRefused
from searchsync.ops.chunks import ChunkController
from searchsync.ops.rebuild import plan as plans
from searchsync.ops.rebuild.backfill import Backfill, ChunkDone
from searchsync.ops.rebuild.deps import RebuildSteps
from searchsync.ops.rebuild.finish import finish
from searchsync.ops.rebuild.outcome import RebuildOptions, RebuildOutcome
from searchsync.ops.rebuild.state import RebuildRecord, Status, watermark_keys
from searchsync.projection import Projector
from searchsync.search.sink import Sink


class Rebuilder(RebuildSteps):
    """Runs one rebuild from its saved status to the end."""

    async def run(self, options: RebuildOptions) -> RebuildOutcome:
        projector = self.d.registry.get(options.aggregate_type)
        alias = self.d.settings.alias(options.aggregate_type)
        existing = await self.d.state.unfinished(alias)
        if options.abandon:
            return await self._abandon(alias, existing, options.dry_run)
        if options.dry_run:
            return await self._dry_run(projector, alias, existing)
        if existing is not None and not options.resume:
            raise OperationRefused(
                f"alias {alias} has an unfinished rebuild {existing.rebuild_id} "
                f"({existing.status.value}, into {existing.target_index}): pass --resume to "
                "continue it, or --abandon to give it up"
            )
        if existing is None and options.resume:
            raise InvalidRequest(
                f"no unfinished rebuild of {alias} to resume: run without --resume"
            )
        try:
            if existing is None:
                record = await self._begin(projector, alias)
            else:
                record = existing
                self.d.progress.step("resume", f"resuming {record.rebuild_id} at {record.status}")
            return await self._continue(projector, record, options)
        finally:
            await self.stop_catchup()

    async def _plan(self, projector: Projector, alias: str) -> plans.Plan:
        writer = await self.d.index_admin.write_index(alias)
        if writer is None:
            raise OperationRefused(
                f"alias {alias} has no write index: run `searchsync index init --type "
                f"{projector.aggregate_type}` first"
            )
        topics = await asyncio.to_thread(
            plans.type_topics, self.d.kafka, self.d.settings, projector.aggregate_type
        )
        watermark = await asyncio.to_thread(plans.high_watermarks, self.d.kafka, topics)
        indices = await self.d.index_admin.list_indices(alias)
        rows = await self.d.truth.count(projector)
        current = next((i for i in indices if i.name == writer.index), None)
        name = naming.next_physical_name(alias, [i.name for i in indices])
        group = f"{self.d.settings.kafka.group_id}.rebuild.v{naming.physical_version(alias, name)}"
        return plans.Plan(
            aggregate_type=projector.aggregate_type,
            alias=alias,
            current_index=writer.index,
            new_index=name,
            catchup_group=group,
            topics=topics,
            watermark=watermark,
            rows=rows,
            old_schema_version=writer.schema_version,
            new_schema_version=projector.schema_version,
            current_docs=None if current is None else current.docs,
        )

    async def _dry_run(
        self, projector: Projector, alias: str, existing: RebuildRecord | None
    ) -> RebuildOutcome:
        plan = await self._plan(projector, alias)
        if existing is not None:
            message = (
                f"alias {alias} has an unfinished rebuild into {existing.target_index} "
                f"({existing.status.value}): --resume would continue it; nothing was changed"
            )
        elif (why := plans.unloaded(plan, projector.table, self.d.settings)) is not None:
            return RebuildOutcome(False, "refused", f"{why}; nothing was changed", None, plan)
        else:
            message = (
                f"would rebuild {alias}: {plan.current_index} -> {plan.new_index} "
                f"({plan.rows} rows, catch-up group {plan.catchup_group}); nothing was changed"
            )
        return RebuildOutcome(True, "planned", message, existing, plan)

    async def _begin(self, projector: Projector, alias: str) -> RebuildRecord:
        plan = await self._plan(projector, alias)  # the watermark is taken here, first
        why = plans.unloaded(plan, projector.table, self.d.settings)
        if why is not None:
            raise OperationRefused(why)
        now = utc_now()
        record = RebuildRecord(
            rebuild_id=uuid.uuid4().hex,
            aggregate_type=projector.aggregate_type,
            alias=alias,
            source_index=plan.current_index,
            target_index=plan.new_index,
            schema_version=projector.schema_version,
            catchup_group=plan.catchup_group,
            watermark=dict(plan.watermark),
            last_id=None,
            rows_done=0,
            rows_failed=0,
            status=Status.BACKFILLING,
            message=None,
            started_at=now,
            updated_at=now,
        )
        await self.d.state.create(record)
        self.d.progress.step(
            "watermark",
            f"watermark {watermark_keys(plan.watermark)} recorded",
            rebuild=record.rebuild_id,
        )
        await self._create_index(projector, record)
        return record

    async def _create_index(self, projector: Projector, record: RebuildRecord) -> None:
        meta = plans.rebuild_meta(
            projector.schema_version, record.rebuild_id, record.watermark, record.source_index
        )
        await self.d.index_admin.create_index(
            record.target_index, plans.index_body(projector.mapping), meta=meta
        )
        self.d.progress.step("create", f"created {record.target_index} (bulk-load settings)")

    async def _continue(
        self, projector: Projector, record: RebuildRecord, options: RebuildOptions
    ) -> RebuildOutcome:
        failures: list[tuple[str, str]] = []
        if record.status is Status.BACKFILLING:
            if not await self.d.index_admin.exists(record.target_index):
                await self._create_index(projector, record)  # stopped between save and create
            record, done, failures = await self._backfill(projector, record, options)
            if not done:
                message = f"stopped after {options.stop_after_chunks} chunks; run with --resume"
                return RebuildOutcome(False, "interrupted", message, record, failures=failures)
            await asyncio.to_thread(
                plans.check_history, self.d.kafka, record.watermark, record.alias
            )
            failed = await asyncio.to_thread(
                self.d.kafka.alter_committed, record.catchup_group, dict(record.watermark)
            )
            if failed:
                raise OperationRefused(f"setting {record.catchup_group}'s offsets: {failed}")
            record = await self.save(record, status=Status.CATCHING_UP)
        return await finish(self, projector, record, options, failures)

    async def _backfill(
        self, projector: Projector, record: RebuildRecord, options: RebuildOptions
    ) -> tuple[RebuildRecord, bool, list[tuple[str, str]]]:
        total = max(await self.d.truth.count(projector), record.rows_done)
        current = record

        async def on_chunk(chunk: ChunkDone) -> None:
            nonlocal current
            current = await self.save(
                current,
                last_id=chunk.last_id,
                rows_done=current.rows_done + chunk.rows,
                rows_failed=current.rows_failed + chunk.failed,
            )
            self.d.metrics.scanned(current.alias, chunk.rows)
            self.d.metrics.indexed(current.alias, chunk.indexed)
            self.d.metrics.failed(current.alias, chunk.failed)
            self.d.progress.backfill(
                current.rows_done, max(total, current.rows_done), current.rows_failed
            )

        backfill = Backfill(
            truth=self.d.truth,
            sink=Sink(self.d.writer),
            projector=projector,
            target_index=record.target_index,
            chunks=backfill_chunks(self.d.settings),
            on_chunk=on_chunk,
        )
        result = await backfill.run(
            after_id=record.last_id, stop_after_chunks=options.stop_after_chunks
        )
        self.d.progress.backfill(
            current.rows_done, max(total, current.rows_done), current.rows_failed, final=True
        )
        for doc_id, why in result.failures:
            self.d.progress.step("backfill", f"not indexed: {doc_id}: {why}")
        return current, result.complete, result.failures

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
            await asyncio.to_thread(self.d.kafka.delete_group, record.catchup_group)
        except Exception as exc:  # the group may still have members for a session timeout
            kept += f"; group {record.catchup_group} not deleted ({exc})"
        return RebuildOutcome(True, "abandoned", f"abandoned {record.rebuild_id}; {kept}", record)


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
