"""Rewrites at an unchanged revision: a REBUILD whose fresh projection differs from the stored
document is written again with ``external_gte`` at the truth's revision (docs/design.md, invariant
12), and only while this member holds the owner epochs of its partitions (invariant 17, "Owner
epochs"): a member that lost a partition and still runs writes nothing back."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable

from searchsync.errors import ErrorCode, TransientError
from searchsync.mysql.owner_epochs import OwnerEpochs
from searchsync.search.sink import EXTERNAL, EXTERNAL_GTE, IndexOp, OutcomeKind, Sink, WriteOutcome
from searchsync.stream.coalesce import Work
from searchsync.stream.verdict import Planned, Verdict, from_outcome, verdict_of
from searchsync.types import TopicPartition

log = logging.getLogger(__name__)


class Rewrites:
    """The same-revision rewrites of one processor."""

    def __init__(self, sink: Sink, owners: OwnerEpochs | None) -> None:
        self._sink = sink
        self._owners = owners

    async def rewrite(
        self, plans: list[Planned], ahead: list[tuple[Planned, WriteOutcome]]
    ) -> list[Verdict]:
        """REBUILDs already applied at their revision: rewrite with ``external_gte`` those whose
        stored projection differs (invariant 12); a newer stored document joins `ahead`."""
        out: list[Verdict] = []
        by_alias: dict[str, list[Planned]] = defaultdict(list)
        for plan in plans:
            by_alias[plan.alias].append(plan)
        rewrite: list[Planned] = []
        for alias, group in by_alias.items():
            try:
                stored = await self._sink.stored_projections(
                    alias, [p.document.doc_id for p in group]
                )
            except TransientError as exc:
                out.extend(verdict_of(p, OutcomeKind.FAILED, exc.code, exc.message) for p in group)
                continue
            for plan in group:
                found = stored.get(plan.document.doc_id)
                doc = plan.document
                if found is None or found.version < doc.source_revision:
                    changed = "stored doc changed"
                    out.append(
                        verdict_of(plan, OutcomeKind.FAILED, ErrorCode.ES_409_UNCONFIRMED, changed)
                    )
                elif found.version > doc.source_revision:
                    message = f"stored version {found.version} > {doc.source_revision}"
                    op = IndexOp.from_document(plan.alias, doc)
                    ahead.append(
                        (plan, WriteOutcome(op, OutcomeKind.AHEAD, None, message, found.version))
                    )
                elif (
                    found.projection_hash == doc.projection_hash
                    and found.content_hash == doc.projection_hash
                    and found.schema_version == plan.projector.schema_version
                    and found.sync_hash == doc.body.get("sync_hash")
                ):
                    out.append(verdict_of(plan, OutcomeKind.ALREADY_APPLIED))
                else:
                    rewrite.append(plan)
        if not rewrite:
            return out
        written, refused = await self._fenced_write(rewrite)
        out.extend(refused)
        for plan, outcome in written:
            if outcome.kind is OutcomeKind.AHEAD:  # a newer write won the race: re-check it
                ahead.append((plan, outcome))
            else:
                out.append(from_outcome(plan, outcome))
        return out

    async def _fenced_write(
        self, plans: list[Planned]
    ) -> tuple[list[tuple[Planned, WriteOutcome]], list[Verdict]]:
        """Write `plans` with ``external_gte`` under their partitions' owner epochs (invariant 17):
        the outcomes of those written, and the verdicts of the others."""
        if self._owners is None:
            outcomes = await sink_write(self._sink, plans, EXTERNAL_GTE)
            return list(zip(plans, outcomes, strict=True)), []
        mine: list[Planned] = []
        refused: list[Verdict] = []
        code, why = ErrorCode.OWNER_FENCED, "another member took the partition's owner epoch"
        try:
            async with self._owners.fenced(partitions_of(p.work for p in plans)) as ours:
                for plan in plans:
                    if all((q.topic, q.partition) in ours for q in plan.work.positions):
                        mine.append(plan)
                    else:
                        refused.append(verdict_of(plan, OutcomeKind.FAILED, code, why))
                outcomes = await sink_write(self._sink, mine, EXTERNAL_GTE) if mine else []
        except TransientError as exc:  # unchecked, or the check's lock not kept to the end
            return [], [verdict_of(p, OutcomeKind.FAILED, exc.code, exc.message) for p in plans]
        return list(zip(mine, outcomes, strict=True)), refused


async def sink_write(
    sink: Sink, planned: list[Planned], version_type: str = EXTERNAL
) -> list[WriteOutcome]:
    """One outcome per plan; the sink raising fails them all (INTERNAL)."""
    ops = [IndexOp.from_document(p.alias, p.document) for p in planned]
    if version_type != EXTERNAL:
        ops = [op._replace(version_type=version_type) for op in ops]
    try:
        return await sink.write(ops)
    except Exception:
        log.exception("the sink raised unexpectedly; its works will be retried")
        why = "the sink raised unexpectedly (see the log)"
        return [WriteOutcome.failed(op, ErrorCode.INTERNAL, why) for op in ops]


def partitions_of(works: Iterable[Work]) -> set[TopicPartition]:
    return {(p.topic, p.partition) for w in works for p in w.positions}
