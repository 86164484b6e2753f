"""The stray sweep: the documents no bucket holds (invariant 13).

Once per type and rotation, after the buckets: read the documents outside the key space (at most
`stray_ceiling`), join the misplaced ones, drop the ids the buckets found, wait `settle_s` once
and re-read the rest by id on both sides. A document still outside its key with a row is a STRAY
(REBUILD at the row's revision; one above it is counted `ahead`, left alone); live without a row
is an ORPHAN; a tombstone without a row is left alone. A failed read reports nothing.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Collection, Mapping, Sequence

from searchsync.ops.repair.buckets import key_of_id
from searchsync.ops.repair.model import Finding, FindingKind, IndexEntry
from searchsync.ops.repair.report import StrayReport
from searchsync.ops.repair.span import SpanScan
from searchsync.projection import Projector

log = logging.getLogger(__name__)


async def sweep(
    scan: SpanScan,
    projector: Projector,
    alias: str,
    misplaced: Mapping[str, IndexEntry],
    found: Collection[str],
) -> StrayReport:
    """Read, settle, confirm and heal the strays of one type; `found`: the ids the buckets of
    this rotation found already (their heal rewrites the whole document)."""
    report = StrayReport(projector.aggregate_type, misplaced=len(misplaced))
    started = time.monotonic()
    try:
        ids = sorted((await _outside(scan, alias, report) | misplaced.keys()) - set(found))
        report.candidates = len(ids)
        findings: list[Finding] = []
        if ids:
            await scan.sleep(scan.config.settle_s)
        page = scan.config.stray_page
        for n in range(0, len(ids), page):
            chunk = ids[n : n + page]
            findings.extend(await _confirm(scan, projector, alias, chunk, report))
    except Exception as exc:  # a partial read: nothing from it counts
        report.interrupted = f"{type(exc).__name__}: {exc}"
        log.warning("repair sweep of %s strays interrupted", alias, exc_info=exc)
    else:
        report.appended, report.stopped = await scan.healer.heal(findings)
        if report.stopped is None:
            report.findings = findings
    report.seconds = time.monotonic() - started
    return report


async def _outside(scan: SpanScan, alias: str, report: StrayReport) -> set[str]:
    """The ids of the documents outside the key space, at most `stray_ceiling`."""
    ids: set[str] = set()
    r = scan.reader
    async with contextlib.aclosing(r.index.strays(alias, scan.config.stray_page)) as pages:
        async for page in pages:
            await r.limits.es_requests.take(1)
            ids.update(e.id for e in page)
            if len(ids) >= scan.config.stray_ceiling:
                report.truncated = True
                break
    report.outside = len(ids)
    return ids


async def _confirm(
    scan: SpanScan, projector: Projector, alias: str, ids: Sequence[str], report: StrayReport
) -> list[Finding]:
    """The findings of `ids`, re-read by id on both sides."""
    t = projector.aggregate_type
    rows, docs = await scan.reader.by_ids(projector, alias, ids)
    key = key_of_id(t)
    out: list[Finding] = []
    for i in ids:
        doc, row = docs.get(i), rows.get(i)
        stored = None if doc is None or doc.source is None else doc.source.get("sync_hash")
        if doc is None or stored == key(i):
            continue  # gone, or written in its key range since: the buckets see it
        detail = f"sync_hash {stored} outside the key range of {key(i)}"
        if row is None:
            if not doc.is_deleted:
                out.append(Finding(FindingKind.ORPHAN, t, i, None, doc.version, detail))
        elif doc.version > row.revision:
            report.ahead += 1
        else:
            out.append(Finding(FindingKind.STRAY, t, i, row.revision, doc.version, detail))
    return out
