"""One step: turn a batch of coalesced works into verdicts.

For each work it re-reads the truth (batched per aggregate type), builds the document with the one
projector, writes it through the alias with the revision as the external version, and says what
became of it. It knows nothing of Kafka, offsets or the DLQ: the pipeline acts on the verdicts.

Rules (DESIGN.md, issue 3):
- a row older than the event (a lagging replica) is not written: it is read again from the
  primary, and if the primary is behind too the revision went backwards (REVISION_REGRESSION);
- a row that is gone (hard delete) becomes a tombstone at the newest revision known for it (the
  event's, or the writer's revision floor if that is higher);
- a 409 whose stored version equals ours is "already applied"; a stored version above the truth
  is re-checked against the primary, and if the truth is still behind it is a revision
  regression (DLQ, never "already applied").
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from consumer.errors import PoisonMessage, RevisionRegression, TransientError
from consumer.mysql.truth import TruthReader
from consumer.projection import Document, Projector, ProjectorRegistry, Row
from consumer.search.sink import IndexOp, OutcomeKind, Sink, WriteOutcome
from consumer.stream.coalesce import Work

FLOOR_SQL = (
    "SELECT aggregate_id AS id, revision FROM search_revision_floor"
    " WHERE aggregate_type = '{aggregate_type}' AND aggregate_id IN %s"
)


class Result(enum.Enum):
    APPLIED = "applied"  # written now
    ALREADY_APPLIED = "already_applied"  # the index held exactly this revision
    RETRY = "retry"  # try the work again later (`systemic`: the cluster's fault, not the event's)
    DEAD = "dead"  # send every event of the work to the DLQ with `code`


@dataclass(frozen=True, slots=True)
class Verdict:
    work: Work
    result: Result
    code: str | None = None
    message: str | None = None
    systemic: bool = False
    document: Document | None = None
    alias: str | None = None
    loaded_revision: int | None = None
    schema_version: int | None = None

    @property
    def finished(self) -> bool:
        return self.result in (Result.APPLIED, Result.ALREADY_APPLIED)


@dataclass(slots=True)
class _Planned:
    work: Work
    projector: Projector
    alias: str
    document: Document
    loaded_revision: int | None  # None: the row is gone


class Processor:
    """Re-read, project, write: one batch of works in, one verdict per work out."""

    def __init__(
        self,
        *,
        registry: ProjectorRegistry,
        truth: TruthReader,
        sink: Sink,
        alias_for: Callable[[str], str],
    ) -> None:
        self._registry = registry
        self._truth = truth
        self._sink = sink
        self._alias_for = alias_for

    async def process(self, works: Sequence[Work]) -> list[Verdict]:
        verdicts: dict[int, Verdict] = {}
        planned: list[_Planned] = []
        by_type: dict[str, list[Work]] = defaultdict(list)
        for work in works:
            by_type[work.key.aggregate_type].append(work)
        for aggregate_type, group in by_type.items():
            try:
                projector = self._registry.get(aggregate_type)
            except PoisonMessage as exc:
                for work in group:
                    verdicts[id(work)] = Verdict(work, Result.DEAD, exc.code, exc.message)
                continue
            try:
                plans, early = await self._plan(projector, group, primary=False)
            except TransientError as exc:
                for work in group:
                    verdicts[id(work)] = _retry(work, exc, systemic=True)
                continue
            planned.extend(plans)
            verdicts.update({id(v.work): v for v in early})

        for verdict in await self._write(planned):
            verdicts[id(verdict.work)] = verdict
        return [verdicts[id(work)] for work in works]

    async def _plan(
        self, projector: Projector, works: Sequence[Work], *, primary: bool
    ) -> tuple[list[_Planned], list[Verdict]]:
        """Load the rows of `works` and build their documents; early verdicts for the rest."""
        ids = [w.key.aggregate_id for w in works]
        rows = await self._truth.load(projector.select_sql, ids, primary=primary)
        behind = [
            w.key.aggregate_id
            for w in works
            if w.key.aggregate_id in rows
            and int(rows[w.key.aggregate_id]["revision"]) < w.max_revision
        ]
        if behind and not primary:
            # Older than the event: a lagging replica. The primary cannot lag behind an event
            # Debezium read from its binlog, so its answer is final.
            fresh = await self._truth.load(projector.select_sql, behind, primary=True)
            for aggregate_id in behind:
                if aggregate_id in fresh:
                    rows[aggregate_id] = fresh[aggregate_id]
                else:
                    del rows[aggregate_id]
        missing = [i for i in ids if i not in rows]
        floors = await self._floors(projector.aggregate_type, missing, primary) if missing else {}
        alias = self._alias_for(projector.aggregate_type)
        plans: list[_Planned] = []
        early: list[Verdict] = []
        for work in works:
            row = rows.get(work.key.aggregate_id)
            try:
                plan = self._plan_one(projector, alias, work, row, floors)
            except PoisonMessage as exc:
                early.append(
                    Verdict(
                        work,
                        Result.DEAD,
                        exc.code,
                        exc.message,
                        alias=alias,
                        loaded_revision=None if row is None else int(row["revision"]),
                        schema_version=projector.schema_version,
                    )
                )
                continue
            plans.append(plan)
        return plans, early

    @staticmethod
    def _plan_one(
        projector: Projector, alias: str, work: Work, row: Row | None, floors: dict[str, int]
    ) -> _Planned:
        if row is None:
            revision = max(work.max_revision, floors.get(work.key.aggregate_id, 0))
            doc = projector.tombstone(work.key.aggregate_id, revision)
            return _Planned(work, projector, alias, doc, None)
        loaded = int(row["revision"])
        if loaded < work.max_revision:
            raise RevisionRegression(
                f"the primary's row is at revision {loaded}, older than event revision "
                f"{work.max_revision}: the revision went backwards (id re-created without "
                "its revision floor?)"
            )
        return _Planned(work, projector, alias, projector.project(row), loaded)

    async def _floors(self, aggregate_type: str, ids: list[str], primary: bool) -> dict[str, int]:
        sql = FLOOR_SQL.format(aggregate_type=aggregate_type.replace("'", ""))
        rows = await self._truth.load(sql, ids, primary=primary)
        return {i: int(r["revision"]) for i, r in rows.items()}

    async def _write(self, planned: list[_Planned]) -> list[Verdict]:
        if not planned:
            return []
        ops = [IndexOp.from_document(p.alias, p.document) for p in planned]
        outcomes = await self._sink.write(ops)
        verdicts: list[Verdict] = []
        ahead: list[tuple[_Planned, WriteOutcome]] = []
        for plan, outcome in zip(planned, outcomes, strict=True):
            if outcome.kind is OutcomeKind.AHEAD:
                ahead.append((plan, outcome))
            else:
                verdicts.append(_from_outcome(plan, outcome))
        if ahead:
            verdicts.extend(await self._recheck(ahead))
        return verdicts

    async def _recheck(self, ahead: list[tuple[_Planned, WriteOutcome]]) -> list[Verdict]:
        """The index holds a newer revision than the row just read: ask the primary again."""
        out: list[Verdict] = []
        by_projector: dict[str, list[tuple[_Planned, WriteOutcome]]] = defaultdict(list)
        for item in ahead:
            by_projector[item[0].projector.aggregate_type].append(item)
        for group in by_projector.values():
            projector = group[0][0].projector
            works = [plan.work for plan, _ in group]
            try:
                fresh, early = await self._plan(projector, works, primary=True)
            except TransientError as exc:
                out.extend(_retry(w, exc, systemic=True) for w in works)
                continue
            out.extend(early)
            stored = {id(plan.work): o.stored_version or 0 for plan, o in group}
            retry_now: list[_Planned] = []
            for plan in fresh:
                version = stored[id(plan.work)]
                if plan.document.source_revision > version:
                    retry_now.append(plan)  # the primary has caught up: write again
                elif plan.loaded_revision is None:
                    # The row is gone and the index already holds a later revision: nothing this
                    # event knows is newer than what is indexed (a stale event of a deleted id).
                    out.append(_done(plan, Result.ALREADY_APPLIED))
                elif plan.document.source_revision == version:
                    out.append(_done(plan, Result.ALREADY_APPLIED))
                else:
                    out.append(
                        _failed(
                            plan,
                            Result.DEAD,
                            "REVISION_REGRESSION",
                            f"index holds revision {version} but the primary's row is at "
                            f"{plan.document.source_revision}: the revision went backwards "
                            "(id re-created without its revision floor?)",
                        )
                    )
            if retry_now:
                ops = [IndexOp.from_document(p.alias, p.document) for p in retry_now]
                for plan, outcome in zip(retry_now, await self._sink.write(ops), strict=True):
                    if outcome.kind is OutcomeKind.AHEAD:  # raced again: try the work later
                        out.append(_failed(plan, Result.RETRY, "ES_AHEAD", outcome.message))
                    else:
                        out.append(_from_outcome(plan, outcome))
        return out


def _done(plan: _Planned, result: Result) -> Verdict:
    return Verdict(
        plan.work,
        result,
        document=plan.document,
        alias=plan.alias,
        loaded_revision=plan.loaded_revision,
        schema_version=plan.projector.schema_version,
    )


def _failed(
    plan: _Planned, result: Result, code: str | None, message: str | None, *, systemic: bool = False
) -> Verdict:
    """A DEAD or RETRY verdict for a planned write, with what is known of it."""
    return Verdict(
        plan.work,
        result,
        code,
        message,
        systemic=systemic,
        alias=plan.alias,
        loaded_revision=plan.loaded_revision,
        schema_version=plan.projector.schema_version,
    )


def _from_outcome(plan: _Planned, outcome: WriteOutcome) -> Verdict:
    if outcome.kind is OutcomeKind.APPLIED:
        return _done(plan, Result.APPLIED)
    if outcome.kind is OutcomeKind.ALREADY_APPLIED:
        return _done(plan, Result.ALREADY_APPLIED)
    if outcome.kind is OutcomeKind.POISON:
        return _failed(plan, Result.DEAD, outcome.code, outcome.message)
    return _failed(plan, Result.RETRY, outcome.code, outcome.message, systemic=outcome.systemic)


def _retry(work: Work, exc: TransientError, *, systemic: bool, alias: str | None = None) -> Verdict:
    return Verdict(work, Result.RETRY, exc.code, exc.message, systemic=systemic, alias=alias)
