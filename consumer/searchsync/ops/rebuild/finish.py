"""The rebuild after its backfill (docs/design.md, Rebuild): catch up, restore the settings, verify,
swap, hand over. With a changed schema version the sweep has old-shape documents rewritten and the
catch-up group writes until the redeployed live group committed as far (unless ``--no-wait``)."""

from __future__ import annotations

import asyncio
import time

from searchsync.errors import OperationRefused
from searchsync.naming import parse_physical_name, read_alias_name
from searchsync.ops.rebuild import plan as plans
from searchsync.ops.rebuild.deps import RebuildSteps
from searchsync.ops.rebuild.outcome import RebuildOptions, RebuildOutcome
from searchsync.ops.rebuild.state import RebuildRecord, Status
from searchsync.ops.rebuild.verify import VerifyReport, verify
from searchsync.projection import Projector
from searchsync.search.port import IndexInfo

SWEEP_PASSES = 3
SETTLE_MARGIN_S = 1.0
"""Beyond two fence intervals: a batch that passed the gate just before the fence went up."""


async def finish(
    rb: RebuildSteps,
    projector: Projector,
    record: RebuildRecord,
    options: RebuildOptions,
    failures: list[tuple[str, str]],
) -> RebuildOutcome:
    report: VerifyReport | None = None
    if record.status is not Status.SWAPPED:
        record, report = await _verify_and_swap(rb, projector, record)
        if not report.ok:
            message = (
                f"refused to swap: {'; '.join(report.reasons)}. The alias still points at "
                f"{record.source_index}; fix the cause, then `--resume` verifies again (or "
                "`--abandon`)"
            )
            return RebuildOutcome(False, "refused", message, record, None, report, failures)
    d = rb.d
    await rb.start_catchup(record)
    old = await _source_info(rb, record)
    old_version = None if old is None else old.schema_version
    target = await rb.catch_up(record)  # what the live group wrote to the old index before the swap
    live = d.settings.kafka.group_id
    changed = old_version is not None and old_version != projector.schema_version
    note = await _sweep(rb, projector, record) if changed else ""
    if changed and options.wait_for_live:
        d.progress.step(
            "handover",
            f"schema {old_version} -> {projector.schema_version}: the catch-up group keeps "
            f"writing until group {live}, redeployed with the new projector, catches up",
        )
        mine = await rb.committed(record.catchup_group, sorted(target))
        try:
            await rb.wait_until(record, live, mine)
        except OperationRefused as exc:
            message = (
                f"{exc}. The alias points at {record.target_index}; the catch-up group "
                f"{record.catchup_group} keeps its offsets. Redeploy `searchsync run` with the "
                "new projector, then run the rebuild again with --resume to finish the handover"
            )
            record = await rb.save(record, message=message)
            return RebuildOutcome(False, "waiting", message, record, None, report, failures)
    elif changed:
        note += (
            f"; --no-wait: the index gets no new writes until group {live} runs the new "
            "projector (it continues from where it was fenced)"
        )
    await rb.stop_catchup()
    deleted = await asyncio.to_thread(d.kafka.delete_group, record.catchup_group)
    record = await rb.save(record, status=Status.DONE, message=None)
    message = (
        f"alias {record.alias} -> {record.target_index}; {record.source_index} kept "
        f"(drop it later with `searchsync index drop`); catch-up group "
        f"{record.catchup_group} {'deleted' if deleted else 'was already gone'}{note}"
    )
    return RebuildOutcome(True, "done", message, record, None, report, failures)


async def _verify_and_swap(
    rb: RebuildSteps, projector: Projector, record: RebuildRecord
) -> tuple[RebuildRecord, VerifyReport]:
    d, r = rb.d, rb.d.settings.rebuild
    await rb.start_catchup(record)
    await rb.catch_up(record)
    d.progress.step("catch-up", f"{record.catchup_group} reached the topics' end")
    previous = await _source_info(rb, record)
    refresh, replicas = plans.restored_settings(projector.mapping, previous)
    await d.index_admin.update_settings(
        record.target_index, refresh_interval=refresh, replicas=replicas
    )
    d.progress.step("settings", f"{record.target_index}: refresh {refresh}, replicas {replicas}")
    record = await rb.save(record, status=Status.VERIFYING)
    report = VerifyReport()
    for attempt in range(1, r.verify_attempts + 1):
        if attempt > 1:  # concurrent writes make one measurement racy: catch up, measure again
            await rb.catch_up(record)
        report = await verify(d, projector, record)
        d.metrics.set_query_diff_rate(record.alias, report.query_diff_rate)
        d.progress.step("verify", f"attempt {attempt}: {report.summary()}")
        if report.ok:
            break
    if not report.ok:
        record = await rb.save(record, status=Status.REFUSED, message="; ".join(report.reasons))
        return record, report
    # one _aliases call moves the write alias and its read alias (invariant 15)
    await d.index_admin.swap_alias(record.alias, old=record.source_index, new=record.target_index)
    record = await rb.save(record, status=Status.SWAPPED, message=None)
    parsed = parse_physical_name(record.target_index)
    if parsed is not None:
        d.metrics.set_alias_physical_index(record.alias, parsed[1])
    read = read_alias_name(record.alias)
    d.progress.step("swap", f"alias {record.alias} and read alias {read} -> {record.target_index}")
    return record, report


async def _sweep(rb: RebuildSteps, projector: Projector, record: RebuildRecord) -> str:
    """Once every old consumer has seen its fence (two check intervals and a margin), append a
    REBUILD at its stored version for every document of another schema version in the new index
    (the catch-up group rewrites it; the rebuild never writes one itself, invariant 9), until a
    pass finds none; a note for the summary when some remain (the redeployed group applies them)."""
    d, index, version = rb.d, record.target_index, projector.schema_version
    await d.sleep(2 * d.settings.pipeline.fence_check_interval_s + SETTLE_MARGIN_S)
    for attempt in range(1, SWEEP_PASSES + 1):
        await d.reader.refresh(index)
        stale = await d.reader.other_schema(index, version)
        for doc_id, stored in stale:
            await d.outbox.append_rebuild(record.aggregate_type, doc_id, stored)
        d.progress.step(
            "sweep",
            f"pass {attempt}: {len(stale)} documents of another schema version in "
            f"{index}" + (": REBUILD events appended" if stale else ""),
        )
        if not stale:
            return ""
        left = await _wait_rewritten(rb, index, version, {i for i, _ in stale})
        if left:
            return (
                f"; {len(left)} documents of another schema version were still in {index} after "
                "the sweep (their REBUILD events are on the topic: the redeployed group rewrites "
                f"them), e.g. {sorted(left)[:5]}"
            )
    return ""


async def _wait_rewritten(rb: RebuildSteps, index: str, version: int, ids: set[str]) -> set[str]:
    """Wait until none of `ids` is of another schema version in `index` (their REBUILDs reach
    the topic through Debezium, then the catch-up group); the ids still stale at the deadline."""
    d, r = rb.d, rb.d.settings.rebuild
    deadline = time.monotonic() + r.catchup_timeout_s
    while True:
        await d.reader.refresh(index)
        left = ids & {i for i, _ in await d.reader.other_schema(index, version)}
        if not left or rb.catchup_failure() is not None or time.monotonic() >= deadline:
            return left
        await d.sleep(r.poll_interval_s)


async def _source_info(rb: RebuildSteps, record: RebuildRecord) -> IndexInfo | None:
    """The index the rebuild started from, as it is now (None once it is gone)."""
    found = await rb.d.index_admin.list_indices(record.alias)
    return next((i for i in found if i.name == record.source_index), None)
