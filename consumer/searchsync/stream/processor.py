"""One step: a batch of works in, one `Verdict` per work out: re-read the truth, project, write at
the revision, under the truth rules of docs/design.md (invariants 3, 4, 12) and docs/consumer.md. No
Kafka, offsets or DLQ here; failures are verdicts, never exceptions, and a fenced target's works are
answered SCHEMA_FENCED before anything is read. The owner epochs of the works' partitions are taken
before the truth is read, and a rewrite at an unchanged revision is written only under them
(invariant 17): OWNER_FENCED for a partition another member took."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence

from searchsync.errors import ErrorCode, PoisonMessage, RevisionRegression, TransientError
from searchsync.mysql.fanout import FanoutStore, FanoutTarget
from searchsync.mysql.owner_epochs import OwnerEpochs
from searchsync.mysql.truth import Truth
from searchsync.projection import Projector, ProjectorRegistry
from searchsync.projection.references import dependents
from searchsync.search.sink import OutcomeKind, Sink, WriteOutcome
from searchsync.stream.coalesce import Work
from searchsync.stream.fence import SchemaFence
from searchsync.stream.rewrite import Rewrites, partitions_of, sink_write
from searchsync.stream.verdict import (
    Planned,
    Regressed,
    Verdict,
    failed_plan,
    failed_work,
    from_outcome,
    is_rebuild,
    plan_one,
    postdates,
    read_failed,
    regressed_verdicts,
    row_behind,
    verdict_of,
)
from searchsync.types import TopicPartition

log = logging.getLogger(__name__)


class Processor:
    def __init__(
        self,
        *,
        registry: ProjectorRegistry,
        truth: Truth,
        sink: Sink,
        alias_for: Callable[[str], str],
        fence: SchemaFence,
        fanout: FanoutStore | None = None,
        owners: OwnerEpochs | None = None,
    ) -> None:
        """`owners`: None only where no other member can write the same documents (a test)."""
        self._registry = registry
        self._owners = owners
        self._rewrites = Rewrites(sink, owners)
        self._fanout = fanout  # where events of referenced aggregates record their fan-out
        self._truth = truth
        self._sink = sink
        self._alias_for = alias_for
        self._fence = fence

    def released(self, partitions: Sequence[TopicPartition]) -> None:
        """`partitions` were assigned or revoked: their owner epochs are taken anew."""
        if self._owners is not None:
            self._owners.forget(partitions)

    async def process(self, works: Sequence[Work]) -> list[Verdict]:
        if self._owners is not None:
            try:
                await self._owners.take(partitions_of(works))
            except Exception as exc:  # nothing may be read before the epochs are ours
                return [read_failed(w, exc, w.key.aggregate_type) for w in works]
        verdicts: dict[int, Verdict] = {}
        planned: list[Planned] = []
        by_type: dict[str, list[Work]] = defaultdict(list)
        for work in works:
            by_type[work.key.aggregate_type].append(work)
        for aggregate_type, group in by_type.items():
            ended = await self._record_fanout(aggregate_type, group)
            if ended is not None:  # the type only fans out, or its fan-out was not recorded
                verdicts.update({id(v.work): v for v in ended})
                continue
            try:
                projector = self._registry.get(aggregate_type)
            except PoisonMessage as exc:
                for work in group:
                    verdicts[id(work)] = failed_work(work, exc.code, exc.message)
                continue
            # a fenced target: nothing read, written or dead-lettered
            held = await self._fence.hold(self._alias_for(aggregate_type), projector, group)
            if held is not None:
                verdicts.update({id(v.work): v for v in held})
                continue
            try:
                plans, early = await self._plan(projector, group, primary=False)
            except Exception as exc:  # the truth could not be read: every work of the type failed
                verdicts.update({id(w): read_failed(w, exc, aggregate_type) for w in group})
                continue
            planned.extend(plans)
            verdicts.update({id(v.work): v for v in early})

        since = self._fence.mark()
        written = await self._fence.after_write(await self._write(planned), since=since)
        for verdict in written:
            verdicts[id(verdict.work)] = verdict
        return [verdicts[id(work)] for work in works]

    async def _record_fanout(
        self, aggregate_type: str, works: Sequence[Work]
    ) -> list[Verdict] | None:
        """An event of a type a projector's lookup names records one ``search_fanout`` job per
        dependent type and lookup before its work may finish (docs/design.md, invariant 16). The
        verdicts of works that end here (a type without a projector, or the record failed); None:
        on to their projector."""
        found = dependents(self._registry, aggregate_type)
        if not found or self._fanout is None:
            return None
        targets = [
            FanoutTarget(
                aggregate_type, w.key.aggregate_id, p.aggregate_type, lookup.name, w.max_revision
            )
            for w in works
            for p, lookup in found
        ]
        try:
            await self._fanout.record(targets)
        except Exception as exc:  # not durable: nothing of these works may finish
            return [read_failed(w, exc, aggregate_type) for w in works]
        if aggregate_type in self._registry.types():
            return None
        return [Verdict(w, OutcomeKind.APPLIED) for w in works]

    async def _plan(
        self, projector: Projector, works: Sequence[Work], *, primary: bool
    ) -> tuple[list[Planned], list[Verdict]]:
        """Load the rows of `works` and build their documents; early verdicts for the rest."""
        ids = [w.key.aggregate_id for w in works]
        rows = await self._truth.rows_by_id(projector, ids, primary=primary)
        behind = [
            w.key.aggregate_id
            for w in works
            if row_behind(rows.get(w.key.aggregate_id), w, projector)
        ]
        if behind and not primary:
            # Older than the event: a lagging replica. The primary cannot lag behind an event
            # Debezium read from its binlog, so its answer is final.
            fresh = await self._truth.rows_by_id(projector, behind, primary=True)
            for aggregate_id in behind:
                if aggregate_id in fresh:
                    rows[aggregate_id] = fresh[aggregate_id]
                else:
                    del rows[aggregate_id]
        aggregate_type, missing = projector.aggregate_type, [i for i in ids if i not in rows]
        floors: dict[str, int] = {}
        if missing:
            floors = await self._truth.revision_floors(aggregate_type, missing, primary=primary)
        alias = self._alias_for(aggregate_type)
        plans: list[Planned] = []
        early: list[Verdict] = []
        regressed: list[Regressed] = []
        for work in works:
            row = rows.get(work.key.aggregate_id)
            try:
                plans.append(plan_one(projector, alias, work, row, floors))
            except RevisionRegression as exc:
                assert row is not None  # only a row older than the work's events regresses
                regressed.append(Regressed(projector, work, row, exc))
            except Exception as exc:  # refused, or a bug in the projector: this work's alone
                if not isinstance(exc, PoisonMessage):
                    where = {"aggregate_type": aggregate_type, "id": work.key.aggregate_id}
                    log.warning("projector raised unexpectedly", extra=where, exc_info=True)
                early.append(failed_plan(projector, alias, work, row, exc))
        if regressed:
            early.extend(await self._regressed(alias, regressed))
        return plans, early

    async def _regressed(self, alias: str, works: list[Regressed]) -> list[Verdict]:
        """Works whose row is older than their events (`regressed_verdicts`): the stored
        versions of those whose events all postdate the row."""
        stale = [r.work.key.aggregate_id for r in works if postdates(r.work, r.row, r.projector)]
        try:
            stored = await self._sink.stored_projections(alias, stale) if stale else {}
        except TransientError as exc:
            return [failed_work(r.work, exc.code, exc.message) for r in works]
        return regressed_verdicts(alias, works, stored)

    async def _write(self, planned: list[Planned]) -> list[Verdict]:
        if not planned:
            return []
        outcomes = await sink_write(self._sink, planned)
        verdicts: list[Verdict] = []
        ahead: list[tuple[Planned, WriteOutcome]] = []
        same_revision: list[Planned] = []
        for plan, outcome in zip(planned, outcomes, strict=True):
            if outcome.kind is OutcomeKind.AHEAD:
                ahead.append((plan, outcome))
            elif outcome.kind is OutcomeKind.ALREADY_APPLIED and is_rebuild(plan.work):
                same_revision.append(plan)
            else:
                verdicts.append(from_outcome(plan, outcome))
        if same_revision:
            verdicts.extend(await self._rewrites.rewrite(same_revision, ahead))
        if ahead:
            verdicts.extend(await self._recheck(ahead))
        return verdicts

    async def _recheck(self, ahead: list[tuple[Planned, WriteOutcome]]) -> list[Verdict]:
        """The index holds a newer revision than the row read: ask the primary again."""
        out: list[Verdict] = []
        by_projector: dict[str, list[tuple[Planned, WriteOutcome]]] = defaultdict(list)
        for item in ahead:
            by_projector[item[0].projector.aggregate_type].append(item)
        for group in by_projector.values():
            projector = group[0][0].projector
            works = [plan.work for plan, _ in group]
            try:
                fresh, early = await self._plan(projector, works, primary=True)
            except Exception as exc:
                out.extend(read_failed(w, exc, projector.aggregate_type) for w in works)
                continue
            out.extend(early)
            stored = {id(plan.work): o.stored_version or 0 for plan, o in group}
            retry_now: list[Planned] = []
            for plan in fresh:
                version = stored[id(plan.work)]
                if plan.document.source_revision > version:
                    retry_now.append(plan)  # the primary has caught up: write again
                elif plan.loaded_revision is None:
                    # The row is gone and the index already holds a later revision: nothing this
                    # event knows is newer than what is indexed (a stale event of a deleted id).
                    out.append(verdict_of(plan, OutcomeKind.ALREADY_APPLIED))
                elif plan.document.source_revision == version:
                    out.append(verdict_of(plan, OutcomeKind.ALREADY_APPLIED))
                else:
                    out.append(
                        verdict_of(
                            plan,
                            OutcomeKind.FAILED,
                            ErrorCode.REVISION_REGRESSION,
                            f"index holds revision {version} but the primary's row is at "
                            f"{plan.document.source_revision}: the revision went backwards "
                            "(id re-created without its revision floor?)",
                        )
                    )
            if retry_now:
                outcomes = await sink_write(self._sink, retry_now)
                for plan, outcome in zip(retry_now, outcomes, strict=True):
                    if outcome.kind is OutcomeKind.AHEAD:  # raced again: try the work later
                        out.append(
                            verdict_of(
                                plan, OutcomeKind.FAILED, ErrorCode.ES_AHEAD, outcome.message
                            )
                        )
                    else:
                        out.append(from_outcome(plan, outcome))
        return out
