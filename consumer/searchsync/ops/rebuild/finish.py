"""The rebuild after its backfill: catch up, restore the settings, verify, swap, and hand the
index over to the live group (docs/design.md, Rebuild).

After the swap, with the same schema version the catch-up group replays to a snapshot taken after
the swap and is deleted; with a changed one the live group is fenced, so the catch-up group keeps
writing until the redeployed live group has committed at least as far on every partition
(``--no-wait`` skips this), and once the fence has settled the sweep has the old-shape documents
rewritten through the outbox.
"""

from __future__ import annotations

import asyncio

from searchsync.errors import OperationRefused
from searchsync.naming import parse_physical_name, read_alias_name
from searchsync.ops.rebuild import plan as plans
from searchsync.ops.rebuild.catchup import CatchUp, LagWatch
from searchsync.ops.rebuild.deps import RebuildSteps
from searchsync.ops.rebuild.outcome import RebuildOptions, RebuildOutcome
from searchsync.ops.rebuild.state import RebuildRecord, Status
from searchsync.ops.rebuild.sweep import settle_s, sweep_other_schema, wait_rewritten
from searchsync.ops.rebuild.verify import VerifyReport, verify
from searchsync.projection import Projector
from searchsync.types import TopicPartition

__all__ = ["finish", "verify_and_swap"]


async def finish(
    rb: RebuildSteps,
    projector: Projector,
    record: RebuildRecord,
    options: RebuildOptions,
    failures: list[tuple[str, str]],
) -> RebuildOutcome:
    report: VerifyReport | None = None
    if record.status is not Status.SWAPPED:
        record, report = await verify_and_swap(rb, projector, record)
        if not report.ok:
            message = "refused to swap: " + "; ".join(report.reasons)
            message += (
                f". The alias still points at {record.source_index}; fix the cause, then "
                "`--resume` verifies again (or `--abandon`)"
            )
            return RebuildOutcome(
                False, "refused", message, record, verify=report, failures=failures
            )
    return await _after_swap(rb, projector, record, options, report, failures)


async def verify_and_swap(
    rb: RebuildSteps, projector: Projector, record: RebuildRecord
) -> tuple[RebuildRecord, VerifyReport]:
    d, r = rb.d, rb.d.settings.rebuild
    catchup = await rb.start_catchup(record)
    watch = rb.lag_watch(record.alias)
    await _catch_up(watch, catchup, record, timeout_s=r.catchup_timeout_s)
    d.progress.step("catch-up", f"{record.catchup_group} reached the topics' end")
    previous = next(
        (
            i
            for i in await d.index_admin.list_indices(record.alias)
            if i.name == record.source_index
        ),
        None,
    )
    refresh, replicas = plans.restored_settings(projector.mapping, previous)
    await d.index_admin.update_settings(
        record.target_index, refresh_interval=refresh, replicas=replicas
    )
    d.progress.step("settings", f"{record.target_index}: refresh {refresh}, replicas {replicas}")
    record = await rb.save(record, status=Status.VERIFYING)
    report = VerifyReport()
    for attempt in range(1, r.verify_attempts + 1):
        if attempt > 1:  # concurrent writes make one measurement racy: catch up, measure again
            await _catch_up(watch, catchup, record, timeout_s=r.catchup_timeout_s)
        report = await verify(
            reader=d.reader,
            truth=d.truth,
            projector=projector,
            old_index=record.source_index,
            new_index=record.target_index,
            limits=r,
            failed_rows=record.rows_failed,
            seed=rb.seed(),
        )
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


async def _after_swap(
    rb: RebuildSteps,
    projector: Projector,
    record: RebuildRecord,
    options: RebuildOptions,
    report: VerifyReport | None,
    failures: list[tuple[str, str]],
) -> RebuildOutcome:
    d, r = rb.d, rb.d.settings.rebuild
    catchup = await rb.start_catchup(record)
    watch = rb.lag_watch(record.alias)
    indices = await d.index_admin.list_indices(record.alias)
    old = next((i for i in indices if i.name == record.source_index), None)
    old_version = None if old is None else old.schema_version
    # covers what the live group wrote to the old index before the swap
    target = await _catch_up(watch, catchup, record, timeout_s=r.catchup_timeout_s)
    live = d.settings.kafka.group_id
    changed = old_version is not None and old_version != projector.schema_version
    note = ""
    if changed:
        note = await _sweep(rb, catchup, projector, record)
    if changed and options.wait_for_live:
        d.progress.step(
            "handover",
            f"schema {old_version} -> {projector.schema_version}: the catch-up group keeps "
            f"writing until group {live}, redeployed with the new projector, catches up",
        )
        mine = await watch.committed(record.catchup_group, sorted(target))
        try:
            await watch.wait_until(
                live,
                mine,
                timeout_s=r.live_wait_timeout_s,
                what=f"live group {live}",
                failure=catchup.failure,
            )
        except OperationRefused as exc:
            message = (
                f"{exc}. The alias points at {record.target_index}; the catch-up group "
                f"{record.catchup_group} keeps its offsets. Redeploy `searchsync run` with the "
                "new projector, then run the rebuild again with --resume to finish the handover"
            )
            record = await rb.save(record, message=message)
            return RebuildOutcome(
                False, "waiting", message, record, verify=report, failures=failures
            )
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
    return RebuildOutcome(True, "done", message, record, verify=report, failures=failures)


SWEEP_PASSES = 3


async def _sweep(
    rb: RebuildSteps, catchup: CatchUp, projector: Projector, record: RebuildRecord
) -> str:
    """Once the old consumers' fences have settled, have every document of another schema
    version in the new index rewritten (REBUILD events, applied by the catch-up group) until a
    pass finds none; a note for the summary when some remain (the redeployed group applies them)."""
    d, r = rb.d, rb.d.settings.rebuild
    await d.sleep(settle_s(d.settings))
    left: tuple[str, ...] = ()
    for attempt in range(1, SWEEP_PASSES + 1):
        result = await sweep_other_schema(
            reader=d.reader,
            outbox=d.outbox,
            aggregate_type=record.aggregate_type,
            index=record.target_index,
            schema_version=projector.schema_version,
        )
        d.progress.step(
            "sweep",
            f"pass {attempt}: {result.found} documents of another schema version in "
            f"{record.target_index}" + (": REBUILD events appended" if result.found else ""),
        )
        if not result.found:
            return ""
        left = await wait_rewritten(
            reader=d.reader,
            index=record.target_index,
            schema_version=projector.schema_version,
            ids=result.ids,
            timeout_s=r.catchup_timeout_s,
            poll_s=r.poll_interval_s,
            sleep=d.sleep,
            failure=catchup.failure,
        )
        if left:
            break
    if not left:
        return ""
    return (
        f"; {len(left)} documents of another schema version were still in "
        f"{record.target_index} after the sweep (their REBUILD events are on the topic: the "
        f"redeployed group rewrites them), e.g. {list(left[:5])}"
    )


async def _catch_up(
    watch: LagWatch, catchup: CatchUp, record: RebuildRecord, *, timeout_s: float
) -> dict[TopicPartition, int]:
    """Wait until the catch-up group reached the topics' ends as of now; return those ends."""
    target = await watch.snapshot(sorted({t for t, _ in record.watermark}))
    await watch.wait_until(
        record.catchup_group,
        target,
        timeout_s=timeout_s,
        what=f"catch-up group {record.catchup_group}",
        failure=catchup.failure,
    )
    return target
