"""The packed light page of the MySQL truth side (searchsync/mysql/truth_buckets.py): what
MariaDB's GROUP_CONCAT gives back unpacks to exactly the rows, and anything short of that
(a string cut at ``group_concat_max_len``, a wrong count, a malformed field) is refused, so
the caller reads the page as rows instead of taking a truncated page for a short one. Each row's
state (0 live, 1 soft-deleted, 2 soft-deleted before the tombstone window) reads the same packed
and as a row."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from searchsync.mysql.truth_buckets import TruthEntry, _light_entry, prefix_range, unpack_light

_ROWS = st.lists(
    st.tuples(st.text(min_size=1, max_size=40), st.integers(0, 2**63 - 1), st.integers(0, 2)),
    max_size=60,
    unique_by=lambda t: t[0],
)


def _pack(rows: list[tuple[str, int, int]]) -> str:
    """What `CONCAT_WS(',', HEX(id), revision, state)` joined by ',' gives."""
    return ",".join(f"{i.encode().hex().upper()},{r},{s}" for i, r, s in rows)


def _entry(i: str, r: int, state: int) -> TruthEntry:
    """The entry a row in `state` must read as."""
    return TruthEntry(i, r, deleted=state in (1, 2), purged=state == 2)


@given(_ROWS)
def test_a_packed_page_unpacks_to_exactly_its_rows(rows: list[tuple[str, int, int]]) -> None:
    text = _pack(rows)
    got = unpack_light((len(rows), text if rows else None))
    assert got == [_entry(i, r, s) for i, r, s in rows]
    assert unpack_light((len(rows), text.encode() if rows else None)) == got


@given(_ROWS)
def test_a_page_read_as_rows_reads_the_same_entries(rows: list[tuple[str, int, int]]) -> None:
    """The fallback of a packed page: the same rows as tuples (the state an int, as MySQL's
    ``IF`` returns it) give the entries the packed page gives."""
    as_rows = [_light_entry((i, r, s), True) for i, r, s in rows]
    assert as_rows == [_entry(i, r, s) for i, r, s in rows]
    assert as_rows == (unpack_light((len(rows), _pack(rows) if rows else None)) or [])


def test_the_states_read_live_deleted_and_purged() -> None:
    assert unpack_light((3, "61,1,0,62,2,1,63,3,2")) == [
        TruthEntry("a", 1, False, None, False),
        TruthEntry("b", 2, True, None, False),
        TruthEntry("c", 3, True, None, True),
    ]
    assert _light_entry(("a", 1, 0), True) == TruthEntry("a", 1, False, None, False)
    assert _light_entry(("b", 2, 1), True) == TruthEntry("b", 2, True, None, False)
    assert _light_entry(("c", 3, 2), True) == TruthEntry("c", 3, True, None, True)
    assert _light_entry((42, 3), False) == TruthEntry("42", 3, False, None, False)  # no column


@given(_ROWS.filter(bool), st.integers(1, 400))
def test_a_string_cut_at_the_length_limit_is_refused(
    rows: list[tuple[str, int, int]], limit: int
) -> None:
    text = _pack(rows)
    cut = text[:limit]
    got = unpack_light((len(rows), cut), max_len=limit)
    if len(text) >= limit:  # MariaDB cut it (or it just fits the limit): never taken
        assert got is None
    else:
        assert got == [_entry(i, r, s) for i, r, s in rows]


@given(_ROWS.filter(bool), st.integers(1, 5))
def test_a_count_that_disagrees_with_the_string_is_refused(
    rows: list[tuple[str, int, int]], extra: int
) -> None:
    assert unpack_light((len(rows) + extra, _pack(rows))) is None
    if len(rows) > extra:
        assert unpack_light((len(rows) - extra, _pack(rows))) is None


def test_null_and_malformed_fields_are_refused() -> None:
    assert unpack_light(None) is None
    assert unpack_light((0, None)) == []
    assert unpack_light((1, None)) is None
    assert unpack_light((1, "6162,3,3")) is None  # a state that is not 0, 1 or 2
    assert unpack_light((1, "6162,3,")) is None  # no state
    assert unpack_light((1, "616,3,0")) is None  # odd hex
    assert unpack_light((1, "6162,x,0")) is None  # a revision that is no integer
    assert unpack_light((1, "FF,3,0")) is None  # not UTF-8
    assert unpack_light((1, "6162,3,0")) == [TruthEntry("ab", 3, False)]


@given(st.text(min_size=1, max_size=8), st.text(max_size=12))
def test_the_prefix_range_holds_exactly_the_ids_that_start_with_the_prefix(
    prefix: str, rest: str
) -> None:
    lo, hi = prefix_range(prefix)
    for candidate in (prefix + rest, rest, rest + prefix, prefix[:-1] + rest):
        assert (lo <= candidate < hi) == candidate.startswith(prefix)
