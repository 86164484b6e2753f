"""The application side: change a wiki_page row and append its outbox event in one transaction.

This is the library an application (and the load generator, the demo and the tests) uses to keep
the first two invariants of docs/design.md:

1. the business row and its outbox row commit together or not at all: every change is one
   `searchsync.mysql.pool.transaction`, and an error anywhere before the commit rolls back both;
2. ``revision`` rises by exactly one on every change (create = 1, update, soft delete, restore,
   hard delete): each change first takes the row lock (``SELECT ... FOR UPDATE``), so concurrent
   writers of one page serialize and the revisions they get are gap-free.

A hard delete removes the row but remembers its revision in ``search_revision_floor`` (same
transaction); creating that id again continues at ``floor + 1``. Without the floor the new row
would restart at revision 1, below the tombstone Elasticsearch holds, and external versioning
would refuse it forever. `PageWriter.unsafe_recreate` does exactly that wrong thing on purpose,
for the revision-regression test; nothing else should call it.

The lock order is always ``wiki_page`` row, then ``search_revision_floor`` row, then the outbox
insert, so two changes of one id cannot deadlock each other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import aiomysql
import orjson

from searchsync.clock import WallClock, utc_now
from searchsync.errors import PageExists, PageNotFound, PageStateConflict
from searchsync.mysql.outbox import append_outbox
from searchsync.mysql.outbox import delete_outbox_row as _delete_outbox_row
from searchsync.mysql.pool import db_time, mysql_error_code, transaction, translate_errors
from searchsync.types import Operation

__all__ = [
    "AGGREGATE_TYPE",
    "AfterRowWrite",
    "Page",
    "PageWriter",
    "Relations",
    "append_outbox",
]

AGGREGATE_TYPE: Final = "wiki_page"
MAX_PAGE_ID_LENGTH: Final = 64  # wiki_page.id is VARCHAR(64)
MAX_TITLE_LENGTH: Final = 512  # wiki_page.title is VARCHAR(512)
_ER_DUP_ENTRY: Final = 1062

Relations = Mapping[str, Sequence[Mapping[str, Any]]]
"""What ``relations_json`` holds: the related entities keyed by relation type, e.g.
``{"RELATED_CHARACTER": [{"entity_id": "character_xxx", "entity_type": "character",
"title": "齐夏"}]}`` (the layout is in docs/design.md, "The wiki_page document")."""

AfterRowWrite = Callable[[Any, str, int], Awaitable[None]]
"""Test hook ``(conn, page_id, new_revision)`` run after the row write, before the outbox insert.

Raising from it, or closing `conn`, simulates a crash between the two writes.
"""


@dataclass(frozen=True, slots=True)
class Page:
    """A wiki_page row as the application sees it."""

    id: str
    title: str
    content: str
    relations: dict[str, list[Any]]
    revision: int
    deleted_at: datetime | None
    updated_at: datetime

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None


class PageWriter:
    """Changes wiki_page rows, one transaction per change, each with its outbox event.

    Every change returns the revision it committed, once the transaction has committed: the
    revision to wait for (`searchsync.read.wait_for_revision`, read-your-writes). Errors:
    `PageNotFound` (no such row), `PageExists` (create of an existing id, soft-deleted
    included), `PageStateConflict` (soft delete of a deleted page, restore of a live one: a
    change must change something), and the
    `TransientError` codes of `searchsync.mysql.pool` (``ErrorCode.MYSQL_DEADLOCK`` and
    ``ErrorCode.MYSQL_LOCK_TIMEOUT`` are safe to retry: the transaction was rolled back). In
    every error case nothing was written.

    With ``delete_outbox_row=True`` each change also deletes its outbox row in the same
    transaction (Debezium's own outbox pattern): the binlog still carries the insert, so the event
    is published, and ``search_outbox`` stays empty. The price: the table holds no history to
    inspect (which events were written, and when); ``searchsync outbox prune`` is the other way
    to keep the table small (docs/design.md, "Outbox pruning").
    """

    def __init__(
        self,
        pool: aiomysql.Pool,
        *,
        clock: WallClock = utc_now,
        after_row_write: AfterRowWrite | None = None,
        delete_outbox_row: bool = False,
    ) -> None:
        self._pool = pool
        self._clock = clock
        self._after_row_write = after_row_write
        self._delete_after_append = delete_outbox_row

    async def create(self, page_id: str, title: str, content: str, relations: Relations) -> int:
        """Create the page at revision 1, or at ``floor + 1`` if the id was hard-deleted before."""
        return await self._create(page_id, title, content, relations, use_floor=True)

    async def unsafe_recreate(
        self, page_id: str, title: str, content: str, relations: Relations
    ) -> int:
        """UNSAFE: create the page at revision 1 even if the id was hard-deleted at a higher one.

        Simulates an application that ignores ``search_revision_floor``; only the
        revision-regression test should use it. Its UPSERT event announces a revision below the
        tombstone Elasticsearch holds, which the consumer must report, not paper over.
        """
        return await self._create(page_id, title, content, relations, use_floor=False)

    async def update(
        self,
        page_id: str,
        *,
        title: str | None = None,
        content: str | None = None,
        relations: Relations | None = None,
    ) -> int:
        """Change the given fields (at least one). A soft-deleted page can be edited; it stays
        deleted."""
        if title is None and content is None and relations is None:
            raise ValueError("update needs at least one of title, content, relations")
        _check_page_id(page_id)
        if title is not None:
            _check_title(title)
        now = self._now()
        async with transaction(self._pool) as conn:
            revision = await self._lock(conn, page_id) + 1
            sets = ["revision = %s", "updated_at = %s"]
            args: list[Any] = [revision, now]
            if title is not None:
                sets.append("title = %s")
                args.append(title)
            if content is not None:
                sets.append("content = %s")
                args.append(content)
            if relations is not None:
                sets.append("relations_json = %s")
                args.append(_relations_json(relations))
            await _execute(
                conn, f"UPDATE wiki_page SET {', '.join(sets)} WHERE id = %s", (*args, page_id)
            )
            await self._finish(conn, page_id, Operation.UPSERT, revision, now)
        return revision

    async def soft_delete(self, page_id: str) -> int:
        """Mark the page deleted (``deleted_at``); its search document becomes a tombstone."""
        return await self._set_deleted(page_id, deleted=True)

    async def restore(self, page_id: str) -> int:
        """Undo a soft delete."""
        return await self._set_deleted(page_id, deleted=False)

    async def hard_delete(self, page_id: str) -> int:
        """Delete the row and record its revision in ``search_revision_floor``."""
        _check_page_id(page_id)
        now = self._now()
        async with transaction(self._pool) as conn:
            revision = await self._lock(conn, page_id) + 1
            await _execute(conn, "DELETE FROM wiki_page WHERE id = %s", (page_id,))
            await _execute(
                conn,
                "INSERT INTO search_revision_floor (aggregate_type, aggregate_id, revision,"
                " deleted_at) VALUES (%s, %s, %s, %s) ON DUPLICATE KEY UPDATE"
                " revision = GREATEST(revision, VALUES(revision)), deleted_at = VALUES(deleted_at)",
                (AGGREGATE_TYPE, page_id, revision, now),
            )
            await self._finish(conn, page_id, Operation.TOMBSTONE, revision, now)
        return revision

    async def get(self, page_id: str) -> Page | None:
        """The page as committed now (soft-deleted included), or None."""
        async with transaction(self._pool) as conn:
            with translate_errors("read wiki_page"):
                async with conn.cursor(aiomysql.DictCursor) as cur:
                    await cur.execute(
                        "SELECT id, title, content, relations_json, revision, deleted_at,"
                        " updated_at FROM wiki_page WHERE id = %s",
                        (page_id,),
                    )
                    row = await cur.fetchone()
        if row is None:
            return None
        return Page(
            id=row["id"],
            title=row["title"],
            content=row["content"],
            relations=orjson.loads(row["relations_json"]),
            revision=int(row["revision"]),
            deleted_at=row["deleted_at"],
            updated_at=row["updated_at"],
        )

    async def _create(
        self, page_id: str, title: str, content: str, relations: Relations, *, use_floor: bool
    ) -> int:
        _check_page_id(page_id)
        _check_title(title)
        body = _relations_json(relations)
        now = self._now()
        async with transaction(self._pool) as conn:
            if await self._lock_row(conn, page_id) is not None:
                raise PageExists(page_id)
            revision = (await self._floor(conn, page_id) if use_floor else 0) + 1
            try:
                await _execute(
                    conn,
                    "INSERT INTO wiki_page (id, title, content, relations_json, revision,"
                    " deleted_at, updated_at) VALUES (%s, %s, %s, %s, %s, NULL, %s)",
                    (page_id, title, content, body, revision, now),
                )
            except aiomysql.IntegrityError as exc:
                # A concurrent create won the race (READ COMMITTED takes no gap lock).
                if mysql_error_code(exc) == _ER_DUP_ENTRY:
                    raise PageExists(page_id) from exc
                raise
            await self._finish(conn, page_id, Operation.UPSERT, revision, now)
        return revision

    async def _set_deleted(self, page_id: str, *, deleted: bool) -> int:
        _check_page_id(page_id)
        now = self._now()
        async with transaction(self._pool) as conn:
            row = await self._lock_row(conn, page_id)
            if row is None:
                raise PageNotFound(page_id)
            if (row[1] is not None) == deleted:
                state = "deleted already" if deleted else "not deleted"
                raise PageStateConflict(page_id, state)
            revision = int(row[0]) + 1
            await _execute(
                conn,
                "UPDATE wiki_page SET revision = %s, deleted_at = %s, updated_at = %s"
                " WHERE id = %s",
                (revision, now if deleted else None, now, page_id),
            )
            op = Operation.TOMBSTONE if deleted else Operation.UPSERT
            await self._finish(conn, page_id, op, revision, now)
        return revision

    async def _lock(self, conn: Any, page_id: str) -> int:
        """Lock an existing row and return its revision, or raise `PageNotFound`."""
        row = await self._lock_row(conn, page_id)
        if row is None:
            raise PageNotFound(page_id)
        return int(row[0])

    @staticmethod
    async def _lock_row(conn: Any, page_id: str) -> tuple[Any, ...] | None:
        with translate_errors("lock wiki_page"):
            async with conn.cursor() as cur:
                await cur.execute(
                    "SELECT revision, deleted_at FROM wiki_page WHERE id = %s FOR UPDATE",
                    (page_id,),
                )
                row: tuple[Any, ...] | None = await cur.fetchone()
        return row

    @staticmethod
    async def _floor(conn: Any, page_id: str) -> int:
        with translate_errors("lock search_revision_floor"):
            async with conn.cursor() as cur:
                await cur.execute(
                    "SELECT revision FROM search_revision_floor"
                    " WHERE aggregate_type = %s AND aggregate_id = %s FOR UPDATE",
                    (AGGREGATE_TYPE, page_id),
                )
                row = await cur.fetchone()
        return 0 if row is None else int(row[0])

    async def _finish(
        self, conn: Any, page_id: str, op: Operation, revision: int, now: datetime
    ) -> None:
        if self._after_row_write is not None:
            await self._after_row_write(conn, page_id, revision)
        event_id = await append_outbox(conn, AGGREGATE_TYPE, page_id, op, revision, now=now)
        if self._delete_after_append:
            await _delete_outbox_row(conn, event_id)

    def _now(self) -> datetime:
        return db_time(self._clock())


async def _execute(conn: Any, sql: str, args: Sequence[Any]) -> None:
    with translate_errors("write wiki_page"):
        async with conn.cursor() as cur:
            await cur.execute(sql, tuple(args))


def _relations_json(relations: Relations) -> str:
    """The JSON object for ``relations_json``. Only the shape is checked here (a wrong shape is
    a programming error); the projector decides which values it can project."""
    if not isinstance(relations, Mapping):
        raise TypeError(
            "relations must be a mapping of relation type -> list of entities,"
            f" got {type(relations).__name__}"
        )
    encoded: dict[str, list[dict[str, Any]]] = {}
    for kind, entities in relations.items():
        if not isinstance(kind, str) or isinstance(entities, str | bytes | Mapping):
            raise TypeError(f"relations[{kind!r}] must be a sequence of entity mappings")
        encoded[kind] = [dict(entity) for entity in entities]
    return orjson.dumps(encoded).decode("utf-8")


def _check_page_id(page_id: str) -> None:
    if not page_id or len(page_id) > MAX_PAGE_ID_LENGTH:
        raise ValueError(f"page id must have 1..{MAX_PAGE_ID_LENGTH} characters, got {page_id!r}")


def _check_title(title: str) -> None:
    if len(title) > MAX_TITLE_LENGTH:
        raise ValueError(f"title must have at most {MAX_TITLE_LENGTH} characters")
