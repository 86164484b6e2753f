"""The repair wheel's page of one bucket key range of an aggregate table (docs/design.md, "Repair").
The key is ``CRC32(CONCAT('<type>:', id))`` per row, pages keyset by id; with the optional
``sync_hash`` column and its index ``(sync_hash, id)`` (``repair.mysql_sync_hash_column``), pages
are ranges of that index. Light pages come back packed in one GROUP_CONCAT row (`unpack_light`).
Each entry says whether its row is soft-deleted and whether its tombstone may be purged already
(`soft_deletes`: ``deleted_at`` before the caller's cutoff `purged_before`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiomysql

from searchsync.mysql.column_types import ColumnTypes
from searchsync.mysql.dialect import Dialect
from searchsync.mysql.keys import DataTypes, cursor_param
from searchsync.mysql.pool import dialect_of, quote_identifier, transaction_cursor
from searchsync.mysql.soft_deletes import LIVE, PURGED, SoftDeleteState, is_purged
from searchsync.mysql.truth_relations import PACKED_MAX, Packing, read_relations, read_rows
from searchsync.projection import Projector, Row
from searchsync.types import BucketCursor


@dataclass(slots=True)
class TruthEntry:
    """One row as the wheel reads it; `row` (columns, children, lookups) only when content is
    checked; `purged`: soft-deleted before the cutoff of the read, so its tombstone may be gone
    (docs/design.md, "Tombstones and their purge"). Read-only by convention (frozen would cost
    four times as much to build)."""

    id: str
    revision: int
    deleted: bool
    row: Row | None = None
    purged: bool = False


def entry_of_row(
    row: Row,
    *,
    content: bool,
    projector: Projector | None = None,
    purged_before: datetime | None = None,
) -> TruthEntry:
    """`row` as an entry; its key, revision and soft-delete columns are `projector`'s (default:
    ``id``, ``revision``, ``deleted_at``); purged if deleted before `purged_before` (aware)."""
    if projector is None:
        key, revision, deleted = str(row["id"]), row["revision"], row.get("deleted_at")
    else:
        key, revision = projector.key_of(row), row[projector.revision_column]
        deleted = None if projector.deleted_at_column is None else row[projector.deleted_at_column]
    return TruthEntry(
        key,
        int(revision),
        deleted is not None,
        row if content else None,
        is_purged(deleted, purged_before),
    )


async def bucket_page(
    pool: aiomysql.Pool,
    projector: Projector,
    lo: int,
    hi: int,
    after: BucketCursor | None,
    limit: int,
    *,
    content: bool,
    sync_hash_column: bool,
    id_prefix: str,
    packing: Packing,
    kinds: DataTypes | None = None,
    types: ColumnTypes | None = None,
    purged_before: datetime | None = None,
    soft: SoftDeleteState | None = None,
) -> list[TruthEntry]:
    """At most `limit` rows of the table whose bucket key is in ``[lo, hi)``, after `after`;
    with `id_prefix`, only ids starting with it (a text key's prefix). `purged_before` (aware;
    None: no row is purged) is the cutoff of `TruthEntry.purged`; `soft` writes it in SQL for
    the column's type and ``[mysql] time_zone`` (default: UTC)."""
    doing = f"repair scan {projector.table}"
    async with transaction_cursor(pool, doing) as cur:
        integer = False
        if kinds is not None and after is not None:
            integer = await kinds.integer(cur.connection, projector.table, projector.id_column)
        cursor = None if after is None else (after[0], cursor_param(after[1], integer))
        src, args, order = _source(projector, lo, hi, cursor, limit, sync_hash_column, id_prefix)
        if content:
            select = ", ".join(quote_identifier(c) for c in projector.columns)
            sql = f"SELECT {select} FROM {src}"
            rows = await read_rows(cur.connection, sql, tuple(args), doing, types=types)
            await read_relations(cur.connection, projector, rows, packing, types)
            return [
                entry_of_row(r, content=True, projector=projector, purged_before=purged_before)
                for r in rows
            ]
        select = ", ".join(map(quote_identifier, (projector.id_column, projector.revision_column)))
        state = ""
        state_args: tuple[Any, ...] = ()
        if projector.deleted_at_column is not None:
            state, state_args = await (soft or SoftDeleteState()).expression(
                cur.connection, projector.table, projector.deleted_at_column, purged_before
            )
            select += f", {state}"
        page_args = state_args + tuple(args)
        light = None
        columns = (projector.id_column, projector.revision_column, projector.deleted_at_column)
        if columns == ("id", "revision", "deleted_at"):  # packed: the default columns only
            await cur.execute(_packed(dialect_of(cur.connection), src, order, state), page_args)
            light = unpack_light(await cur.fetchone(), max_len=PACKED_MAX)
        if light is None:  # truncated or unexpected: the same page as tuples
            await cur.execute(f"SELECT {select} FROM {src}", page_args)
            tuples: Iterable[tuple[Any, ...]] = await cur.fetchall()
            light = [_light_entry(t, projector.deleted_at_column is not None) for t in tuples]
    return light


def _source(
    projector: Projector,
    lo: int,
    hi: int,
    after: tuple[int, Any] | None,
    limit: int,
    sync_hash_column: bool,
    id_prefix: str,
) -> tuple[str, list[Any], str]:
    """The page's ``FROM ... LIMIT %s``, its parameters and its order."""
    id_key = quote_identifier(projector.id_column)
    args: list[Any]
    if sync_hash_column:  # the index (sync_hash, id): pages in that order, each an index range
        bucket, order = "`sync_hash`", f"`sync_hash`, {id_key}"
        args = [max(lo, after[0]) if after else lo, hi]
        later, later_args = f" AND (`sync_hash` > %s OR {id_key} > %s)", list(after or ())
    else:  # the key per row, a keyset scan of the primary key
        bucket, order = f"CRC32(CONCAT(%s, {id_key}))", id_key
        args = [f"{projector.aggregate_type}:", lo, f"{projector.aggregate_type}:", hi]
        later, later_args = f" AND {id_key} > %s", [after[1]] if after else []
    where = f"{bucket} >= %s AND {bucket} < %s" + (later if after is not None else "")
    args += later_args
    if id_prefix:
        where += f" AND {id_key} >= %s AND {id_key} < %s"
        args.extend(prefix_range(id_prefix))
    src = f"{quote_identifier(projector.table)} WHERE {where} ORDER BY {order} LIMIT %s"
    args.append(limit)
    return src, args, order


def _light_entry(values: tuple[Any, ...], soft_delete: bool) -> TruthEntry:
    """A row of a light page read as rows: id, revision and (with `soft_delete`) its state."""
    key = values[0] if values[0].__class__ is str else str(values[0])
    state = int(values[2]) if soft_delete else LIVE
    return TruthEntry(key, int(values[1]), state != LIVE, None, state == PURGED)


def _packed(dialect: Dialect, src: str, order: str, state: str) -> str:
    """A light page as one row: its row count and ``hex(id),revision,state`` triples in page
    order (one string split in C instead of ~20 us of Python parsing per row); `state` is the
    row's state in SQL (`SoftDeleteState`: 0 live, 1 soft-deleted, 2 purged). The id's
    text is hexed (``CONCAT`` of an integer key is its decimal text; ``HEX`` of an integer is
    not)."""
    key = ", `sync_hash`" if order.startswith("`sync_hash`") else ""
    return dialect.select(
        "SELECT COUNT(*),"
        " GROUP_CONCAT(CONCAT_WS(',', HEX(CONCAT(`id`)), `revision`, `state`)"
        f" ORDER BY {order} SEPARATOR ',')"
        f" FROM (SELECT `id`, `revision`, {state} AS `state`{key} FROM {src}) AS page",
        group_concat_max_len=PACKED_MAX,
    )


def unpack_light(
    packed: Sequence[Any] | None, *, max_len: int = PACKED_MAX
) -> list[TruthEntry] | None:
    """The entries of a `_packed` page (a state 0 live, 1 soft-deleted, 2 purged), or None unless
    it holds exactly COUNT(*) well-formed triples (the server silently cuts a GROUP_CONCAT at
    `max_len`): then read the page as rows."""
    if packed is None:
        return None
    count, text = packed
    if not count:
        return []
    if isinstance(text, bytes | bytearray):
        text = text.decode("ascii", "replace")
    if not isinstance(text, str) or len(text) >= max_len:
        return None
    parts = text.split(",")
    if len(parts) != 3 * count:
        return None
    flags = parts[2::3]
    if any(d != "0" and d != "1" and d != "2" for d in flags):
        return None
    try:
        return [
            TruthEntry(bytes.fromhex(h).decode("utf-8"), int(r), d != "0", None, d == "2")
            for h, r, d in zip(parts[0::3], parts[1::3], flags, strict=True)
        ]
    except ValueError:
        return None


def prefix_range(prefix: str) -> tuple[str, str]:
    """``[lo, hi)`` holding exactly the ids starting with `prefix` in ``utf8mb4_bin`` order. Not
    ``LIKE 'prefix%'``: MariaDB 10.11's range optimisation of it drops ids with 4-byte characters
    after the prefix."""
    if not prefix:
        raise ValueError("an empty prefix has no range")
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)
