"""One step: a batch of works in, each ended in place (`Work.end`): re-read the truth, project,
write at the revision, under the truth rules of docs/design.md (invariants 3, 4, 12) and
docs/consumer.md. No Kafka, offsets or DLQ here; failures are outcomes, never exceptions, and a
fenced target's works are answered SCHEMA_FENCED before anything is read. The owner epochs of the
works' partitions are taken before the truth is read, and a rewrite at an unchanged revision is
written only under them (invariant 17): OWNER_FENCED for a partition another member took."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from searchsync.errors import ErrorCode, PoisonMessage, RevisionRegression, TransientError
from searchsync.mysql.fanout import FanoutStore, FanoutTarget
from searchsync.mysql.owner_epochs import OwnerEpochs
from searchsync.mysql.truth import Truth
from searchsync.projection import Projector, ProjectorRegistry, Row
from searchsync.projection.references import dependents
from searchsync.search.sink import OutcomeKind, Sink
from searchsync.stream.fence import SchemaFence
from searchsync.stream.rewrite import rewrite, sink_write
from searchsync.stream.work import Work
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
        self._fanout = fanout  # where events of referenced aggregates record their fan-out
        self._truth = truth
        self._sink = sink
        self._alias_for = alias_for
        self._fence = fence

    def released(self, partitions: Sequence[TopicPartition]) -> None:
        """`partitions` were assigned or revoked: their owner epochs are taken anew."""
        if self._owners is not None:
            self._owners.forget(partitions)

    async def process(self, works: Sequence[Work]) -> Sequence[Work]:
        """End every work of `works` (its outcome on it); `works` again."""
        if self._owners is not None:
            partitions = {(p.topic, p.partition) for w in works for p in w.positions}
            try:
                await self._owners.take(partitions)
            except Exception as exc:  # nothing may be read before the epochs are ours
                _failed(works, exc)
                return works
        planned: list[Work] = []
        by_type: dict[str, list[Work]] = defaultdict(list)
        for work in works:
            by_type[work.key.aggregate_type].append(work)
        for aggregate_type, group in by_type.items():
            if await self._record_fanout(aggregate_type, group):
                continue  # the type only fans out, or its fan-out was not recorded
            try:
                projector = self._registry.get(aggregate_type)
            except PoisonMessage as exc:
                _failed(group, exc)
                continue
            # a fenced target: nothing read, written or dead-lettered
            if await self._fence.hold(self._alias_for(aggregate_type), projector, group):
                continue
            try:
                planned.extend(await self._plan(projector, group, primary=False))
            except Exception as exc:  # the truth could not be read: every work of the type failed
                _failed(group, exc)
        since = self._fence.mark()
        await self._write(planned)
        await self._fence.after_write(planned, since=since)
        return works

    async def _record_fanout(self, aggregate_type: str, works: Sequence[Work]) -> bool:
        """An event of a type a projector's lookup names records one ``search_fanout`` job per
        dependent type and lookup before its work may finish (docs/design.md, invariant 16). True:
        `works` ended here (a type without a projector, or the record failed); False: on to their
        projector."""
        found = dependents(self._registry, aggregate_type)
        if not found or self._fanout is None:
            return False
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
            _failed(works, exc)
            return True
        if aggregate_type in self._registry.types():
            return False
        for w in works:
            w.plan()
            w.end(OutcomeKind.APPLIED)
        return True

    async def _plan(
        self, projector: Projector, works: Sequence[Work], *, primary: bool
    ) -> list[Work]:
        """Load the rows of `works` and plan their documents: those planned (the others ended)."""
        ids = [w.key.aggregate_id for w in works]
        rows = await self._truth.rows_by_id(projector, ids, primary=primary)
        behind = [
            w.key.aggregate_id
            for w in works
            if (row := rows.get(w.key.aggregate_id)) is not None
            and (loaded := projector.revision_of(row)) is not None
            and loaded < w.max_revision
        ]
        if behind and not primary:
            # Older than the event: a lagging replica. The primary cannot lag behind an event
            # Debezium read from its binlog, so its answer is final.
            for aggregate_id in behind:  # the primary's answer, or gone
                del rows[aggregate_id]
            rows.update(await self._truth.rows_by_id(projector, behind, primary=True))
        aggregate_type, missing = projector.aggregate_type, [i for i in ids if i not in rows]
        floors: dict[str, int] = {}
        if missing:
            floors = await self._truth.revision_floors(aggregate_type, missing, primary=primary)
        alias = self._alias_for(aggregate_type)
        plans: list[Work] = []
        regressed: list[tuple[Work, Row, RevisionRegression]] = []
        for work in works:
            row = rows.get(work.key.aggregate_id)
            try:
                work.plan_row(projector, alias, row, floors.get(work.key.aggregate_id, 0))
                plans.append(work)
            except RevisionRegression as exc:
                assert row is not None  # only a row older than the work's events regresses
                regressed.append((work, row, exc))
            except Exception as exc:  # refused, or a bug in the projector: this work's alone
                if not isinstance(exc, PoisonMessage):
                    where = {"aggregate_type": aggregate_type, "id": work.key.aggregate_id}
                    log.warning("projector raised unexpectedly", extra=where, exc_info=True)
                work.refuse(projector, alias, row, exc)
        if regressed:
            await self._regressed(projector, alias, regressed)
        return plans

    async def _regressed(
        self, projector: Projector, alias: str, works: list[tuple[Work, Row, RevisionRegression]]
    ) -> None:
        """Works whose row is older than their events: already applied when every event of the
        work is newer than the row and the index holds the newest (a redelivery after the id was
        re-created below its old revision: the re-created row's own event is the one that reports
        the regression); otherwise a REVISION_REGRESSION."""
        stale = {id(w): w.key.aggregate_id for w, row, _ in works if _postdates(w, row, projector)}
        ids = list(stale.values())
        try:
            found = await self._sink.stored(alias, ids) if ids else {}
        except TransientError as exc:
            _failed([work for work, _, _ in works], exc)
            return
        for work, row, error in works:
            stored = found.get(work.key.aggregate_id) if id(work) in stale else None
            if stored is not None and stored.version >= work.max_revision:
                work.plan()
                work.end(OutcomeKind.ALREADY_APPLIED)
            else:
                work.refuse(projector, alias, row, error)

    async def _write(self, planned: list[Work]) -> None:
        if not planned:
            return
        outcomes = await sink_write(self._sink, planned)
        ahead: list[tuple[Work, int]] = []  # and the newer version the index holds
        same_revision: list[Work] = []
        for work, outcome in zip(planned, outcomes, strict=True):
            if outcome.kind is OutcomeKind.AHEAD:
                ahead.append((work, outcome.stored_version or 0))
            elif outcome.kind is OutcomeKind.ALREADY_APPLIED and work.is_rebuild:
                same_revision.append(work)
            else:
                work.end(outcome.kind, outcome.code, outcome.message)
        if same_revision:
            await rewrite(self._sink, self._owners, same_revision, ahead)
        if ahead:
            await self._recheck(ahead)

    async def _recheck(self, ahead: list[tuple[Work, int]]) -> None:
        """The index holds a newer revision than the row read: ask the primary again."""
        by_type: dict[str, list[tuple[Work, int]]] = defaultdict(list)
        for item in ahead:
            by_type[item[0].key.aggregate_type].append(item)
        for aggregate_type, group in by_type.items():
            projector = self._registry.get(aggregate_type)  # found when the work was planned
            works = [work for work, _ in group]
            try:
                fresh = await self._plan(projector, works, primary=True)
            except Exception as exc:
                _failed(works, exc)
                continue
            stored = {id(work): version for work, version in group}
            retry_now: list[Work] = []
            for work in fresh:
                version, doc = stored[id(work)], work.document
                assert doc is not None  # planned
                if doc.source_revision > version:
                    retry_now.append(work)  # the primary has caught up: write again
                elif work.loaded_revision is None or doc.source_revision == version:
                    # Gone, and the index already holds a later revision: nothing this event
                    # knows is newer than what is indexed (a stale event of a deleted id); or
                    # the same revision.
                    work.end(OutcomeKind.ALREADY_APPLIED)
                else:
                    work.end(
                        OutcomeKind.FAILED,
                        ErrorCode.REVISION_REGRESSION,
                        f"index holds revision {version} but the primary's row is at "
                        f"{doc.source_revision}: the revision went backwards "
                        "(id re-created without its revision floor?)",
                    )
            if retry_now:
                outcomes = await sink_write(self._sink, retry_now)
                for work, outcome in zip(retry_now, outcomes, strict=True):
                    if outcome.kind is OutcomeKind.AHEAD:  # raced again: try the work later
                        work.end(OutcomeKind.FAILED, ErrorCode.ES_AHEAD, outcome.message)
                    else:
                        work.end(outcome.kind, outcome.code, outcome.message)


def _failed(works: Iterable[Work], exc: Exception) -> None:
    """Works that failed before a plan (their rows not read, say): the error's code, or
    INTERNAL."""
    for work in works:
        if isinstance(exc, TransientError | PoisonMessage):
            work.fail(exc.code, exc.message)
            continue
        log.warning("reading the truth raised unexpectedly", exc_info=exc)
        what = f"{work.key.aggregate_type} raised {type(exc).__name__}: {exc}"
        work.fail(ErrorCode.INTERNAL, f"reading {what}")


def _postdates(work: Work, row: Row, projector: Projector) -> bool:
    """Every event of `work` is newer than `row`: none of them can have brought this row."""
    revision = projector.revision_of(row)
    return revision is not None and all(e.source_revision > revision for e in work.events)
