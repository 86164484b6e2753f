"""Rewrites at an unchanged revision: a REBUILD whose fresh projection differs from the stored
document is written again with ``external_gte`` at the truth's revision (docs/design.md, invariant
12), and only while this member holds the owner epochs of its partitions (invariant 17, "Owner
epochs"): a member that lost a partition and still runs writes nothing back."""

from __future__ import annotations

import logging
from collections import defaultdict

from searchsync.errors import ErrorCode, TransientError
from searchsync.mysql.owner_epochs import OwnerEpochs
from searchsync.projection import Document, content_hash
from searchsync.search.sink import EXTERNAL, EXTERNAL_GTE, IndexOp, OutcomeKind, Sink, WriteOutcome
from searchsync.stream.work import Work

log = logging.getLogger(__name__)


async def rewrite(
    sink: Sink,
    owners: OwnerEpochs | None,
    works: list[Work],
    ahead: list[tuple[Work, int]],
) -> None:
    """REBUILDs already applied at their revision: rewrite with ``external_gte`` those whose
    stored projection differs (invariant 12); a newer stored one joins `ahead`, with its version."""
    by_alias: dict[str, list[Work]] = defaultdict(list)
    for work in works:
        by_alias[_alias(work)].append(work)
    changed: list[Work] = []
    for alias, group in by_alias.items():
        try:
            stored = await sink.stored(alias, [_document(w).doc_id for w in group])
        except TransientError as exc:
            for work in group:
                work.end(OutcomeKind.FAILED, exc.code, exc.message)
            continue
        for work in group:
            doc = _document(work)
            found = stored.get(doc.doc_id)
            if found is None or found.version < doc.source_revision:
                why = "stored doc changed"
                work.end(OutcomeKind.FAILED, ErrorCode.ES_409_UNCONFIRMED, why)
            elif found.version > doc.source_revision:
                ahead.append((work, found.version))
            elif (
                (source := found.source).get("projection_hash") == doc.projection_hash
                and _int(source.get("projection_schema_version")) == work.schema_version
                and _int(source.get("sync_hash")) == doc.body.get("sync_hash")
                and content_hash(source) == doc.projection_hash  # an edit keeps the old hash
            ):
                work.end(OutcomeKind.ALREADY_APPLIED)
            else:
                changed.append(work)
    if not changed:
        return
    for work, outcome in await _fenced_write(sink, owners, changed):
        if outcome.kind is OutcomeKind.AHEAD:  # a newer write won the race: re-check it
            ahead.append((work, outcome.stored_version or 0))
        else:
            work.end(outcome.kind, outcome.code, outcome.message)


async def _fenced_write(
    sink: Sink, owners: OwnerEpochs | None, works: list[Work]
) -> list[tuple[Work, WriteOutcome]]:
    """Write `works` with ``external_gte`` under their partitions' owner epochs (invariant 17):
    the outcomes of those written (the others ended OWNER_FENCED, or with the check's error)."""
    if owners is None:
        outcomes = await sink_write(sink, works, EXTERNAL_GTE)
        return list(zip(works, outcomes, strict=True))
    mine: list[Work] = []
    code, why = ErrorCode.OWNER_FENCED, "another member took the partition's owner epoch"
    partitions = {(p.topic, p.partition) for w in works for p in w.positions}
    try:
        async with owners.fenced(partitions) as ours:
            for work in works:
                if all((q.topic, q.partition) in ours for q in work.positions):
                    mine.append(work)
                else:
                    work.end(OutcomeKind.FAILED, code, why)
            outcomes = await sink_write(sink, mine, EXTERNAL_GTE) if mine else []
    except TransientError as exc:  # unchecked, or the check's lock not kept to the end
        for work in works:
            work.end(OutcomeKind.FAILED, exc.code, exc.message)
        return []
    return list(zip(mine, outcomes, strict=True))


def _int(value: object) -> int | None:
    """A stored int field (None: missing or of another type)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _alias(work: Work) -> str:
    assert work.alias is not None, "a planned work has its alias"
    return work.alias


def _document(work: Work) -> Document:
    assert work.document is not None, "a planned work has its document"
    return work.document


async def sink_write(
    sink: Sink, works: list[Work], version_type: str = EXTERNAL
) -> list[WriteOutcome]:
    """One outcome per planned work; the sink raising fails them all (INTERNAL)."""
    ops = [IndexOp.from_document(_alias(w), _document(w)) for w in works]
    if version_type != EXTERNAL:
        ops = [op._replace(version_type=version_type) for op in ops]
    try:
        return await sink.write(ops)
    except Exception:
        log.exception("the sink raised unexpectedly; its works will be retried")
        why = "the sink raised unexpectedly (see the log)"
        return [WriteOutcome.failed(op, ErrorCode.INTERNAL, why) for op in ops]
