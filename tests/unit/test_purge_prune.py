"""The tombstone purge and the outbox prune on in-memory ports (docs/design.md, "Tombstones and
their purge", "Outbox pruning"); the same behaviour on the real services is in
tests/integration/test_tombstone_purge.py and test_outbox_prune.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from purge_fakes import FakeConnect
from searchsync.config import RetentionSettings
from searchsync.errors import InvalidRequest, OperationRefused
from searchsync.ops.retention import prune_outbox, purge_tombstones
from searchsync.projection import format_timestamp, wiki_page

from tests.fakes.outbox import FakeOutbox
from tests.fakes.search_index import InMemoryIndex

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
ALIAS = "searchsync_wiki_page"
INDEX = "searchsync_wiki_page_v1"
RETENTION = RetentionSettings(purge_batch_size=2, prune_batch_size=3, prune_pause_s=0.25)


def engine(mapping: dict[str, Any] | None = None) -> InMemoryIndex:
    """An engine whose ``ALIAS`` writes to ``INDEX`` (the page mapping unless `mapping`)."""
    index = InMemoryIndex()
    index.given_index(INDEX, mapping or wiki_page.load_mapping())
    index.given_alias(ALIAS, INDEX)
    return index


def tombstone(age: timedelta | None) -> dict[str, Any]:
    body: dict[str, Any] = {"is_deleted": True}
    if age is not None:
        body["tombstoned_at"] = format_timestamp(NOW - age)
    return body


async def purge(store: InMemoryIndex, older_than: timedelta, **kwargs: Any) -> Any:
    return await purge_tombstones(
        store, store.admin, ALIAS, RETENTION, older_than, now=NOW, **kwargs
    )


# -- tombstones purge ------------------------------------------------------------------------------


async def test_a_window_below_the_minimum_is_refused_before_anything_is_read() -> None:
    store = engine()
    store.put(INDEX, "old", tombstone(timedelta(days=30)))
    with pytest.raises(InvalidRequest) as info:
        await purge(store, timedelta(days=6, hours=23))
    message = str(info.value)
    assert "7d" in message and "max_event_delay + retry_window + dlq_replay_window" in message
    assert "old" in store.indices[INDEX].docs and store.delete_calls == []


async def test_only_old_tombstones_are_deleted_in_batches() -> None:
    store = engine()
    for i in range(5):
        store.put(INDEX, f"old{i}", tombstone(timedelta(days=8 + i)))
    store.put(INDEX, "young", tombstone(timedelta(days=6)))
    store.put(INDEX, "ageless", tombstone(None))  # written before the field existed: kept
    store.put(INDEX, "live", {"is_deleted": False, "tombstoned_at": format_timestamp(NOW)})
    store.put(INDEX, "live-old", {"is_deleted": False})
    report = await purge(store, timedelta(days=7))
    assert (report.scanned, report.deleted, report.changed, report.failed) == (5, 5, 0, 0)
    assert store.delete_calls == [2, 2, 1]  # purge_batch_size per bulk
    assert sorted(store.indices[INDEX].docs) == ["ageless", "live", "live-old", "young"]
    assert report.index == INDEX and report.before == "2026-11-23T12:00:00.000Z"


async def test_a_document_rewritten_after_the_scan_is_kept_and_reported() -> None:
    store = engine()
    for i in range(4):
        store.put(INDEX, f"d{i}", tombstone(timedelta(days=10)))
    # After the first page is deleted, d2 is re-created (a live write) and d3 deleted elsewhere.
    store.on_page.append(lambda: store.put(INDEX, "d2", {"is_deleted": False}))
    store.on_page.append(lambda: store.indices[INDEX].docs.pop("d3", None))
    report = await purge(store, timedelta(days=7))
    assert (report.deleted, report.changed, report.gone) == (2, 1, 1)
    assert store.indices[INDEX].docs["d2"].body == {"is_deleted": False}  # never deleted


async def test_a_dry_run_lists_and_deletes_nothing() -> None:
    store = engine()
    for i in range(3):
        store.put(INDEX, f"d{i}", tombstone(timedelta(days=10)))
    report = await purge(store, timedelta(days=7), dry_run=True)
    assert report.scanned == 3 and report.deleted == 0 and report.candidates == ["d0", "d1", "d2"]
    assert store.delete_calls == [] and len(store.indices[INDEX].docs) == 3
    assert report.as_json()["dry_run"] is True


async def test_progress_is_reported_per_page() -> None:
    store = engine()
    for i in range(3):
        store.put(INDEX, f"d{i}", tombstone(timedelta(days=10)))
    seen: list[Any] = []
    await purge(store, timedelta(days=7), progress=seen.append)
    assert [(p.scanned, p.deleted) for p in seen] == [(2, 2), (3, 3)]


async def test_no_write_index_or_no_field_is_refused() -> None:
    with pytest.raises(OperationRefused, match="no write index"):
        bare = InMemoryIndex()
        await purge_tombstones(bare, bare.admin, ALIAS, RETENTION, timedelta(days=7), now=NOW)
    with pytest.raises(OperationRefused, match="_mapping"):
        await purge(engine({"mappings": {"properties": {}}}), timedelta(days=7))


async def test_the_minimum_can_be_overridden() -> None:
    store = engine()
    store.put(INDEX, "d", tombstone(timedelta(seconds=5)))
    tiny = RetentionSettings(min_tombstone_age=timedelta(seconds=1))
    report = await purge_tombstones(store, store.admin, ALIAS, tiny, timedelta(seconds=1), now=NOW)
    assert report.deleted == 1


# -- outbox prune --------------------------------------------------------------------------------


def created(age: timedelta) -> datetime:
    return (NOW - age).replace(tzinfo=None)  # naive UTC, as created_at holds it


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


async def prune(outbox: FakeOutbox, connect: FakeConnect, **kwargs: Any) -> Any:
    kwargs.setdefault("older_than", timedelta(days=2))
    return await prune_outbox(outbox, connect, RETENTION, now=NOW, **kwargs)


async def test_prune_deletes_old_rows_in_bounded_batches_with_pauses() -> None:
    outbox = FakeOutbox({i: created(timedelta(days=10)) for i in range(1, 8)})
    outbox.rows.update({8: created(timedelta(hours=1)), 9: created(timedelta(days=3))})
    sleeps = Sleeps()
    report = await prune(outbox, FakeConnect(), sleep=sleeps)
    # pages of 3: [1-3], [4-6], [7-9]; the last holds a young row: nothing younger is deleted,
    # and the walk stops there
    assert outbox.deletes == [(1, 3), (4, 6), (7, 9)]
    assert sorted(outbox.rows) == [8]
    assert report.deleted == 8 and report.batches == 3 and report.last_id == 9
    assert sleeps.calls == [0.25, 0.25]  # a pause between two batches, not before the first


async def test_prune_stops_at_the_first_young_page() -> None:
    outbox = FakeOutbox({1: created(timedelta(hours=1)), 2: created(timedelta(days=9))})
    outbox.rows.update({i: created(timedelta(days=9)) for i in range(3, 10)})
    report = await prune(outbox, FakeConnect(), sleep=Sleeps())
    assert outbox.deletes == [(1, 3)] and report.deleted == 2  # 4.. wait for a later run
    assert 1 in outbox.rows and 4 in outbox.rows


async def test_prune_dry_run_counts_only() -> None:
    outbox = FakeOutbox({i: created(timedelta(days=10)) for i in range(1, 5)})
    report = await prune(outbox, FakeConnect(), dry_run=True, sleep=Sleeps())
    assert report.deleted == 4 and outbox.deletes == [] and len(outbox.rows) == 4
    assert "would_delete" in report.as_json()


@pytest.mark.parametrize(
    ("state", "tasks", "why"),
    [
        ("PAUSED", ("RUNNING",), "is PAUSED"),
        ("RUNNING", ("FAILED",), "task 0 of searchsync-outbox is FAILED: boom"),
        ("RUNNING", (), "has no tasks"),
        ("MISSING", (), "not registered"),
    ],
)
async def test_prune_refuses_unless_the_connector_runs(
    state: str, tasks: tuple[str, ...], why: str
) -> None:
    outbox = FakeOutbox({1: created(timedelta(days=10))})
    with pytest.raises(OperationRefused, match="not RUNNING") as info:
        await prune(outbox, FakeConnect(state, tasks), sleep=Sleeps())
    assert why in str(info.value)
    assert outbox.pages == [] and 1 in outbox.rows


async def test_prune_refuses_a_short_window_before_asking_the_connector() -> None:
    connect = FakeConnect()
    with pytest.raises(InvalidRequest, match="min_outbox_age"):
        await prune(FakeOutbox(), connect, older_than=timedelta(hours=23))
    assert connect.calls == 0


async def test_prune_for_the_relay_deletes_only_published_rows_and_asks_no_connector() -> None:
    outbox = FakeOutbox({i: created(timedelta(days=10)) for i in range(1, 7)})
    outbox.status.update({1: "PUBLISHED", 2: "PENDING", 3: "PUBLISHED", 4: "DEAD", 5: "PROCESSING"})
    outbox.status[6] = "PUBLISHED"
    connect = FakeConnect("PAUSED")  # ignored: there is no connector with the relay
    report = await prune(outbox, connect, sleep=Sleeps(), published_only=True)
    assert sorted(outbox.rows) == [2, 4, 5]  # never a row the relay has not published
    assert report.deleted == 3 and connect.calls == 0
    assert report.as_json()["connector"] is None
