"""The repair wheel's page of one bucket key range of an aggregate table (docs/design.md, "Repair").
The key is ``CRC32(CONCAT('<type>:', id))`` per row, pages keyset by id; with the optional
``sync_hash`` column and its index ``(sync_hash, id)`` (``repair.mysql_sync_hash_column``), pages
are ranges of that index. Light pages come back packed in one GROUP_CONCAT row (`unpack_light`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import aiomysql

from searchsync.mysql.dialect import Dialect
from searchsync.mysql.pool import dialect_of, transaction_cursor
from searchsync.mysql.truth_relations import PACKED_MAX, Packing, read_relations
from searchsync.projection import Projector, Row
from searchsync.types import BucketCursor


@dataclass(slots=True)
class TruthEntry:
    """One row as the wheel reads it; `row` (columns, children, lookups) only when content is
    checked. Read-only by convention (frozen would cost four times as much to build)."""

    id: str
    revision: int
    deleted: bool
    row: Row | None = None


def entry_of_row(row: Row, *, content: bool) -> TruthEntry:
    return TruthEntry(
        id=str(row["id"]),
        revision=int(row["revision"]),
        deleted=row.get("deleted_at") is not None,
        row=row if content else None,
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
) -> list[TruthEntry]:
    """At most `limit` rows of the table whose bucket key is in ``[lo, hi)``, after `after`;
    with `id_prefix`, only ids starting with it."""
    columns = projector.columns if content else ("id", "revision", "deleted_at")
    select = ", ".join(f"`{c}`" for c in columns)
    args: list[Any]
    if sync_hash_column:  # the index (sync_hash, id): pages in that order, each an index range
        key, args, order = "`sync_hash`", [max(lo, after[0]) if after else lo, hi], _BY_KEY
        where = f"{key} >= %s AND {key} < %s"
        if after is not None:
            where += " AND (`sync_hash` > %s OR `id` > %s)"
            args.extend(after)
    else:  # the key per row, a keyset scan of the primary key
        key, order = "CRC32(CONCAT(%s, `id`))", "`id`"
        args = [f"{projector.aggregate_type}:", lo, f"{projector.aggregate_type}:", hi]
        where = f"{key} >= %s AND {key} < %s"
        if after is not None:
            where += " AND `id` > %s"
            args.append(after[1])
    if id_prefix:
        where += " AND `id` >= %s AND `id` < %s"
        args.extend(prefix_range(id_prefix))
    src = f"`{projector.table}` WHERE {where} ORDER BY {order} LIMIT %s"
    args.append(limit)
    rows_as = aiomysql.DictCursor if content else None
    async with transaction_cursor(pool, f"repair scan {projector.table}", rows_as) as cur:
        if content:
            await cur.execute(f"SELECT {select} FROM {src}", tuple(args))
            rows: list[dict[str, Any]] = list(await cur.fetchall())
            await read_relations(cur.connection, projector, rows, packing)
            return [entry_of_row(r, content=True) for r in rows]
        await cur.execute(_packed(dialect_of(cur.connection), src, order), tuple(args))
        light = unpack_light(await cur.fetchone(), max_len=PACKED_MAX)
        if light is None:  # truncated or unexpected: the same page as tuples
            await cur.execute(f"SELECT {select} FROM {src}", tuple(args))
            tuples: Iterable[tuple[Any, ...]] = await cur.fetchall()
            light = [TruthEntry(str(i), int(r), d is not None) for i, r, d in tuples]
    return light


_BY_KEY: Final = "`sync_hash`, `id`"


def _packed(dialect: Dialect, src: str, order: str) -> str:
    """A light page as one row: its row count and ``hex(id),revision,deleted`` triples in page
    order (one string split in C instead of ~20 us of Python parsing per row)."""
    key = ", `sync_hash`" if order == _BY_KEY else ""
    return dialect.select(
        "SELECT COUNT(*),"
        " GROUP_CONCAT(CONCAT_WS(',', HEX(`id`), `revision`, `deleted_at` IS NOT NULL)"
        f" ORDER BY {order} SEPARATOR ',')"
        f" FROM (SELECT `id`, `revision`, `deleted_at`{key} FROM {src}) AS page",
        group_concat_max_len=PACKED_MAX,
    )


def unpack_light(
    packed: Sequence[Any] | None, *, max_len: int = PACKED_MAX
) -> list[TruthEntry] | None:
    """The entries of a `_packed` page, or None unless it holds exactly COUNT(*) well-formed
    triples (the server silently cuts a GROUP_CONCAT at `max_len`): then read the page as rows."""
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
    if any(d != "0" and d != "1" for d in flags):
        return None
    try:
        return [
            TruthEntry(bytes.fromhex(h).decode("utf-8"), int(r), d == "1")
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
