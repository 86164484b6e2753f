"""The repair's rule for soft-deleted rows (docs/design.md, "Tombstones and their purge"): a
soft-deleted row without a document is missing while its ``deleted_at`` is within the tombstone
window, and purged (neither reported nor re-created) once it is older; the compare, the settle
re-check and both ways of reading the state (Python for whole rows, SQL for light pages) agree."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st
from pipeline_fakes import page_row
from searchsync.mysql.soft_deletes import SoftDeleteState, is_purged
from searchsync.mysql.truth_buckets import TruthEntry, entry_of_row
from searchsync.ops.repair.compare import compare, still_holding
from searchsync.ops.repair.model import Finding, FindingKind, IndexEntry
from searchsync.projection import default_registry

from tests.fakes.recording_mysql import RecordingConnection

PROJECTOR = default_registry().get("wiki_page")
TYPE = PROJECTOR.aggregate_type
NOW = datetime(2026, 7, 20, 12, 0, tzinfo=UTC)
WINDOW = timedelta(days=7)
CUTOFF = NOW - WINDOW


def _rows(**deleted_at: datetime | None) -> dict[str, TruthEntry]:
    """Whole rows (as the content read gives them), each at revision 3, without documents."""
    return {
        i: entry_of_row(page_row(i, 3, deleted_at=at), content=True, purged_before=CUTOFF)
        for i, at in deleted_at.items()
    }


def _missing(rows: dict[str, TruthEntry]) -> list[str]:
    found = compare(PROJECTOR, rows, {}, content=True, complete=True)
    assert all(f.kind is FindingKind.MISSING for f in found)
    return [f.id for f in found]


def test_a_row_deleted_within_the_window_without_a_document_is_missing() -> None:
    rows = _rows(
        live=None,
        fresh=(NOW - timedelta(days=1)).replace(tzinfo=None),  # naive: UTC
        old=(NOW - timedelta(days=30)).replace(tzinfo=None),
    )
    assert _missing(rows) == ["fresh", "live"]
    assert (rows["fresh"].deleted, rows["fresh"].purged) == (True, False)
    assert (rows["old"].deleted, rows["old"].purged) == (True, True)


def test_an_incomplete_bucket_reports_no_missing_row_whatever_its_state() -> None:
    rows = _rows(live=None, fresh=NOW.replace(tzinfo=None))
    assert compare(PROJECTOR, rows, {}, content=False, complete=False) == []


def test_the_light_entries_follow_the_same_rule() -> None:
    rows = {
        "live": TruthEntry("live", 3, False),
        "fresh": TruthEntry("fresh", 3, True),
        "old": TruthEntry("old", 3, True, purged=True),
    }
    assert _missing(rows) == ["fresh", "live"]


def test_a_purged_row_with_a_document_is_still_compared() -> None:
    """Purged says only that no document is not drift: a live document of a row deleted long
    ago is a deleted-flag mismatch, a tombstone of it is fine."""
    [old] = _rows(old=(NOW - timedelta(days=30)).replace(tzinfo=None)).values()
    live_doc = IndexEntry("old", 3, None, PROJECTOR.schema_version, False)
    tombstone = IndexEntry("old", 3, None, PROJECTOR.schema_version, True)
    assert [
        f.kind
        for f in compare(PROJECTOR, {"old": old}, {"old": live_doc}, content=False, complete=True)
    ] == [FindingKind.DELETED_FLAG]
    assert compare(PROJECTOR, {"old": old}, {"old": tombstone}, content=False, complete=True) == []


@given(st.integers(-(10**6), 10**6))
def test_missing_exactly_while_the_delete_is_not_older_than_the_window(offset_s: int) -> None:
    at = CUTOFF + timedelta(seconds=offset_s)
    rows = _rows(p=at.replace(tzinfo=None))
    assert _missing(rows) == ([] if at < CUTOFF else ["p"])


def test_the_settle_recheck_keeps_a_fresh_one_and_drops_one_purged_meanwhile() -> None:
    fresh_at = (NOW - timedelta(days=1)).replace(tzinfo=None)
    rows = _rows(fresh=fresh_at, live=None)
    candidates = compare(PROJECTOR, rows, {}, content=False, complete=True)
    assert [f.id for f in still_holding(PROJECTOR, candidates, rows, {})] == ["fresh", "live"]
    # re-read after the settle with a later cutoff: the fresh one crossed the window meanwhile
    later = entry_of_row(page_row("fresh", 3, deleted_at=fresh_at), content=True, purged_before=NOW)
    kept = still_holding(PROJECTOR, candidates, {**rows, "fresh": later}, {})
    assert [f.id for f in kept] == ["live"]
    # and a candidate whose row was soft-deleted before the window is never kept
    old = _rows(old=(NOW - timedelta(days=30)).replace(tzinfo=None))
    stale = Finding(FindingKind.MISSING, TYPE, "old", 3, None)
    assert still_holding(PROJECTOR, [stale], old, {}) == []


def test_aware_and_naive_values_are_the_instant_the_tombstone_carries() -> None:
    """A DATETIME read in a non-UTC ``[mysql] time_zone`` is aware; a naive value is UTC."""
    tokyo = ZoneInfo("Asia/Tokyo")
    before = datetime(2026, 7, 12, 20, 0, tzinfo=UTC)
    # 01:00 on the 13th in Tokyo is 16:00 UTC on the 12th: before the cutoff, though its wall
    # time is after it
    assert is_purged(datetime(2026, 7, 13, 1, 0, tzinfo=tokyo), before)
    assert not is_purged(datetime(2026, 7, 13, 1, 0), before)  # naive: UTC, after it
    assert is_purged(datetime(2026, 7, 12, 19, 59), before)
    assert not is_purged(datetime(2026, 7, 12, 20, 0, tzinfo=UTC), before)  # not older: kept
    assert not is_purged(None, before)
    assert not is_purged(datetime(2000, 1, 1), None)  # no window: none is purged
    assert not is_purged("2000-01-01", before)  # no instant, no age


def _expression(
    data_type: str | None, zone: timezone | ZoneInfo, before: datetime | None
) -> tuple[str, tuple[object, ...], list[str]]:
    conn = RecordingConnection("mariadb", [])
    conn.answers.append([] if data_type is None else [(data_type,)])
    state = SoftDeleteState(zone)

    async def run() -> tuple[str, tuple[object, ...]]:
        first = await state.expression(conn, "wiki_page", "deleted_at", before)
        again = await state.expression(conn, "wiki_page", "deleted_at", before)
        assert again == first
        return first

    sql, args = asyncio.run(run())
    return sql, args, conn.statements


def test_the_sql_cutoff_is_written_as_the_column_stores_it() -> None:
    before = datetime(2026, 7, 12, 20, 0, tzinfo=UTC)
    berlin = ZoneInfo("Europe/Berlin")
    tri = "IF(`deleted_at` IS NULL, 0, IF(`deleted_at` < %s, 2, 1))"
    # a TIMESTAMP compares in the session's zone, UTC
    sql, args, sent = _expression("timestamp", berlin, before)
    assert (sql, args) == (tri, (datetime(2026, 7, 12, 20, 0),))
    assert len(sent) == 1  # the type is read once
    # a DATETIME is a wall-clock time in [mysql] time_zone
    assert _expression("DATETIME", berlin, before)[:2] == (tri, (datetime(2026, 7, 12, 22, 0),))
    assert _expression("datetime", UTC, before)[:2] == (tri, (datetime(2026, 7, 12, 20, 0),))
    # no instant (or no column found), or no window: live or deleted, never purged
    two = "IF(`deleted_at` IS NULL, 0, 1)"
    assert _expression("date", UTC, before)[:2] == (two, ())
    assert _expression(None, UTC, before)[:2] == (two, ())
    sql, args, sent = _expression("datetime", UTC, None)
    assert (sql, args, sent) == (two, (), [])
