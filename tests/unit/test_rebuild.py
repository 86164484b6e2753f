"""The rebuild's orchestration on fakes: step order, resume, refusals, dry run, the handover."""

from __future__ import annotations

import orjson
import pytest
from searchsync.errors import InvalidRequest, OperationRefused
from searchsync.ops.rebuild.plan import RebuildOptions
from searchsync.ops.rebuild.records import Status
from searchsync.search.sink import IndexOp, Sink

from tests.unit.rebuild_fakes import TOPIC, TYPE, World, page


def world_with_pages(n: int = 10) -> World:
    w = World()
    for i in range(n):
        w.put(page(f"p{i:03d}", revision=2))
        w.event(f"p{i:03d}", 2)  # history before the watermark: the catch-up must not replay it
    return w


def assert_converged(w: World, index: str) -> None:
    docs = w.es.indices[index].docs
    rows = w.truth.tables["wiki_page"]
    for doc_id, row in rows.items():
        want = w.projector.project(row)
        assert docs[doc_id].version == want.source_revision, doc_id
        assert want.matches(docs[doc_id].body), doc_id
    for (_, doc_id), floor in w.truth.floors.items():
        if doc_id not in rows:
            assert w.projector.tombstone(doc_id, floor).matches(docs[doc_id].body)
            assert docs[doc_id].version == floor


async def test_a_rebuild_under_writes_swaps_to_an_index_equal_to_the_truth() -> None:
    w = world_with_pages()
    await w.init_alias()

    def during_backfill(n: int) -> None:
        if n == 2:  # writes after the watermark, while the scan runs
            w.put(page("p001", revision=3, title="changed"))  # already scanned: catch-up fixes it
            w.event("p001", 3)
            w.truth.remove("p008", table="wiki_page")  # hard delete of a row not yet scanned
            w.truth.put_floor(TYPE, "p008", 3)
            w.event("p008", 3)
            w.put(page("p050", revision=1))  # a create after the scan's position... also scanned
            w.event("p050", 1)

    w.truth.on_scan = during_backfill
    outcome = await w.rebuilder().run(RebuildOptions(TYPE))
    assert not outcome.ok  # the old index never saw those writes: the queries differ
    assert "rebuild.max_query_diff_rate" in outcome.message
    for doc_id in ("p001", "p008", "p050"):  # the live group catches up the old index
        await w.live_write(doc_id)
    outcome = await w.rebuilder().run(RebuildOptions(TYPE, resume=True))

    assert outcome.ok, outcome.message
    new = f"{w.alias}_v2"
    assert w.es.alias_target(w.alias) == new
    assert f"{w.alias}_v1" in w.es.indices  # the old index is kept
    assert_converged(w, new)
    # watermark first: taken before the first scan
    assert w.log.index("watermarks") < w.log.index("scan")
    # the catch-up group started at the watermark, not at the start of the topic
    group = f"{w.settings.kafka.group_id}.rebuild.v2"
    assert w.topics.altered[0] == (group, {(TOPIC, 0): 10})
    assert group in w.topics.deleted_groups
    state = w.es.indices[new]
    assert state.meta["created_by_rebuild"] is True
    assert state.meta["projection_schema_version"] == w.projector.schema_version
    assert state.meta["watermark"] == {f"{TOPIC}/0": 10}
    assert (state.refresh_interval, state.replicas) == ("1s", 0)  # restored from the mapping
    [record] = w.state.records.values()
    assert record.status is Status.DONE and record.target_index == new
    assert outcome.verify is not None and outcome.verify.ok
    assert outcome.verify.tombstones == 1
    events = [orjson.loads(line) for line in w.out.getvalue().splitlines()]
    assert any(e["event"] == "backfill" for e in events)
    assert "alias_current_physical_index" in w.metrics.render().decode()


async def test_the_new_index_is_filled_with_bulk_load_settings() -> None:
    w = world_with_pages(4)
    await w.init_alias()
    seen: list[tuple[str, int]] = []

    def look(n: int) -> None:
        state = w.es.indices.get(f"{w.alias}_v2")
        assert state is not None
        seen.append((state.refresh_interval, state.replicas))

    w.truth.on_scan = look
    assert (await w.rebuilder().run(RebuildOptions(TYPE))).ok
    assert seen and set(seen) == {("-1", 0)}


async def test_an_interrupted_rebuild_resumes_from_its_last_id_with_the_same_plan() -> None:
    w = world_with_pages(10)
    await w.init_alias()
    first = await w.rebuilder().run(RebuildOptions(TYPE, stop_after_chunks=2))
    assert not first.ok and first.action == "interrupted"
    assert first.record is not None
    saved = first.record
    assert saved.last_id == "p005" and saved.rows_done == 6
    assert w.topics.altered == []  # the catch-up group was not started yet

    w.event("p002", 3)  # the topic moves on; the resumed rebuild keeps its watermark
    w.put(page("p002", revision=3))
    with pytest.raises(OperationRefused, match=r"--resume.*--abandon"):
        await w.rebuilder().run(RebuildOptions(TYPE))

    scans_before = len(w.truth.scans)
    second = await w.rebuilder().run(RebuildOptions(TYPE, resume=True))
    assert second.ok, second.message
    assert w.truth.scans[scans_before][0] == "p005"  # continues after the last saved id
    assert second.record is not None
    assert second.record.rebuild_id == saved.rebuild_id
    assert second.record.target_index == saved.target_index == f"{w.alias}_v2"
    assert second.record.watermark == saved.watermark == {(TOPIC, 0): 10}
    assert w.topics.altered[0][1] == {(TOPIC, 0): 10}
    assert "p000" not in [after for after, _ in w.truth.scans[scans_before:]]
    assert_converged(w, f"{w.alias}_v2")


async def test_resume_without_an_unfinished_rebuild_is_a_usage_error() -> None:
    w = world_with_pages(2)
    await w.init_alias()
    with pytest.raises(InvalidRequest, match="no unfinished rebuild"):
        await w.rebuilder().run(RebuildOptions(TYPE, resume=True))


async def test_a_failed_verification_refuses_the_swap_and_says_why() -> None:
    w = world_with_pages(6)
    w.put({**page("bad"), "relations_json": "not json"})  # the projector refuses it
    await w.es.admin.create_index(
        f"{w.alias}_v1", w.projector.mapping, meta={"projection_schema_version": 2}, alias=w.alias
    )
    others = [w.projector.project(page(f"other{i}")) for i in range(7)]  # as many, none alike
    await Sink(w.es).write([IndexOp.from_document(w.alias, d) for d in others])
    outcome = await w.rebuilder().run(RebuildOptions(TYPE))
    assert not outcome.ok and outcome.action == "refused"
    assert "rebuild.max_failed_rows" in outcome.message
    assert "rebuild.max_count_difference" in outcome.message
    assert "rebuild.max_query_diff_rate" in outcome.message  # the old index holds others
    assert w.es.alias_target(w.alias) == f"{w.alias}_v1"
    [record] = w.state.records.values()
    assert record.status is Status.REFUSED
    assert not w.topics.deleted_groups  # resumable: the group keeps its offsets


async def test_a_rebuild_over_an_index_never_loaded_is_refused_naming_the_load() -> None:
    w = world_with_pages(6)
    await w.es.admin.create_index(
        f"{w.alias}_v1", w.projector.mapping, meta={"projection_schema_version": 2}, alias=w.alias
    )
    with pytest.raises(OperationRefused, match="holds 0 documents for 6 rows") as refused:
        await w.rebuilder().run(RebuildOptions(TYPE))
    assert "searchsync index load --type wiki_page" in str(refused.value)
    assert not w.state.records  # refused before anything was recorded


async def test_a_sample_mismatch_refuses_the_swap() -> None:
    w = world_with_pages(5)
    await w.init_alias()

    def corrupt(n: int) -> None:  # the row changes and no event says so: the index is stale
        if n == 3:
            w.put(page("p000", revision=5))

    w.truth.on_scan = corrupt
    outcome = await w.rebuilder().run(RebuildOptions(TYPE))
    assert not outcome.ok
    assert outcome.verify is not None
    assert [i for i, _ in outcome.verify.mismatches] == ["p000"]
    assert "rebuild.max_sample_mismatches" in outcome.message


async def test_dry_run_changes_nothing() -> None:
    w = world_with_pages(3)
    await w.init_alias()
    before = set(w.es.indices)
    outcome = await w.rebuilder().run(RebuildOptions(TYPE, dry_run=True))
    assert outcome.ok and outcome.plan is not None
    assert outcome.plan.new_index == f"{w.alias}_v2"
    assert outcome.plan.current_index == f"{w.alias}_v1"
    assert outcome.plan.rows == 3
    assert dict(outcome.plan.watermark) == {(TOPIC, 0): 3}
    assert set(w.es.indices) == before
    assert w.state.records == {} and w.topics.altered == [] and "scan" not in w.log


async def test_a_missing_alias_is_refused_with_what_to_run() -> None:
    w = world_with_pages(1)
    with pytest.raises(OperationRefused, match="index init"):
        await w.rebuilder().run(RebuildOptions(TYPE))


async def test_abandon_finishes_the_record_and_deletes_the_group() -> None:
    w = world_with_pages(6)
    await w.init_alias()
    await w.rebuilder().run(RebuildOptions(TYPE, stop_after_chunks=1))
    outcome = await w.rebuilder().run(RebuildOptions(TYPE, abandon=True))
    assert outcome.ok and "index drop" in outcome.message
    [record] = w.state.records.values()
    assert record.status is Status.ABANDONED
    # a new rebuild may start now, into the next index
    again = await w.rebuilder().run(RebuildOptions(TYPE))
    assert again.ok and w.es.alias_target(w.alias) == f"{w.alias}_v3"


async def test_a_changed_schema_version_waits_for_the_live_group() -> None:
    w = world_with_pages(4)
    await w.init_alias(schema_version=1)  # the live index was built by projection schema 1
    outcome = await w.rebuilder().run(RebuildOptions(TYPE))
    assert not outcome.ok and outcome.action == "waiting"  # the live group never caught up
    assert "Redeploy" in outcome.message and "--resume" in outcome.message
    assert w.es.alias_target(w.alias) == f"{w.alias}_v2"
    assert not w.topics.deleted_groups

    live = w.settings.kafka.group_id
    w.topics.commits[(live, (TOPIC, 0))] = 4  # the redeployed group has caught up
    done = await w.rebuilder().run(RebuildOptions(TYPE, resume=True))
    assert done.ok, done.message
    assert f"{live}.rebuild.v2" in w.topics.deleted_groups


async def test_no_wait_stops_the_catch_up_after_the_swap() -> None:
    w = world_with_pages(4)
    await w.init_alias(schema_version=1)
    outcome = await w.rebuilder().run(RebuildOptions(TYPE, wait_for_live=False))
    assert outcome.ok and "--no-wait" in outcome.message


def test_progress_on_a_pipe_prints_a_line_every_interval() -> None:
    import io

    from searchsync.ops.rebuild.progress import Progress

    now = [0.0]
    stream = io.StringIO()
    p = Progress(stream=stream, tty=False, interval_s=5.0, clock=lambda: now[0])
    p.backfill(0, 100, 0)
    now[0] = 1.0
    p.backfill(10, 100, 0)  # within the interval: no line
    now[0] = 6.0
    p.backfill(60, 100, 1)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert "60/100 rows" in lines[1] and "10 rows/s" in lines[1] and "ETA 4s" in lines[1]


async def test_old_shape_documents_written_after_a_schema_changing_swap_are_swept() -> None:
    """An old consumer writes through the alias before its fence goes up: the sweep finds the
    documents of the old schema version in the new index and has each rewritten by a REBUILD
    at its stored version (docs/design.md, "Schema fence")."""
    import dataclasses

    w = world_with_pages(4)
    await w.init_alias(schema_version=1)
    old = dataclasses.replace(w.projector, schema_version=1)

    async def old_consumer_writes_through_the_alias() -> None:  # after the swap, before its fence
        w.put(page("p001", 3, title="changed after the swap"))
        row = w.truth.tables["wiki_page"]["p001"]
        await Sink(w.es).write([IndexOp.from_document(w.alias, old.project(row))])
        written = w.es.get(f"{w.alias}_v2", "p001")
        assert written is not None and written.body["projection_schema_version"] == 1

    w.on_first_sleep.append(old_consumer_writes_through_the_alias)
    outcome = await w.rebuilder().run(RebuildOptions(TYPE, wait_for_live=False))
    assert outcome.ok, outcome.message
    assert w.sleeps and w.sleeps[0] == 2 * w.settings.pipeline.fence_check_interval_s + 1.0
    assert w.outbox.events == [(TYPE, "p001", 3)]
    stored = w.es.get(f"{w.alias}_v2", "p001")
    assert stored is not None and stored.version == 3
    assert stored.body == w.projector.project(w.truth.tables["wiki_page"]["p001"]).body
    assert '"sweep"' in w.out.getvalue()


async def test_a_same_schema_rebuild_does_not_sweep() -> None:
    w = world_with_pages(3)
    await w.init_alias()
    outcome = await w.rebuilder().run(RebuildOptions(TYPE))
    assert outcome.ok and w.outbox.events == [] and w.sleeps == []


async def test_ids_hard_deleted_before_the_watermark_get_their_tombstones_in_the_new_index() -> (
    None
):
    w = world_with_pages(4)
    w.truth.put_floor(TYPE, "gone-1", 5)  # deleted long ago: no row, no event after the watermark
    w.truth.put_floor(TYPE, "p002", 1)  # deleted once, created again since (the row is newer)
    await w.init_alias()
    outcome = await w.rebuilder().run(RebuildOptions(TYPE))
    assert outcome.ok, outcome.message
    docs = w.es.indices[f"{w.alias}_v2"].docs
    assert docs["gone-1"].version == 5 and docs["gone-1"].body["is_deleted"] is True
    assert w.projector.tombstone("gone-1", 5).matches(docs["gone-1"].body)
    assert docs["p002"].version == 2 and docs["p002"].body["is_deleted"] is False


async def test_a_dry_run_over_an_index_never_loaded_shows_the_plan_and_the_refusal() -> None:
    w = world_with_pages(6)
    await w.es.admin.create_index(
        f"{w.alias}_v1", w.projector.mapping, meta={"projection_schema_version": 2}, alias=w.alias
    )
    outcome = await w.rebuilder().run(RebuildOptions(TYPE, dry_run=True))
    assert not outcome.ok and outcome.action == "refused"
    assert outcome.plan is not None and outcome.plan.current_docs == 0
    assert "searchsync index load --type wiki_page" in outcome.message
    assert "nothing was changed" in outcome.message and not w.state.records
