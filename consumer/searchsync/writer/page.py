"""`PageWriter`: the demo's ``wiki_page`` rows through `AsyncAggregateWriter`, one transaction
per change, each with its outbox event."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import aiomysql
import orjson

from searchsync.clock import WallClock, utc_now
from searchsync.mysql.pool import transaction, translate_errors
from searchsync.writer._drivers import AsyncAggregateWriter
from searchsync.writer._table import AggregateTable, Change

MAX_PAGE_ID_LENGTH: Final = 64  # wiki_page.id is VARCHAR(64)
MAX_TITLE_LENGTH: Final = 512  # wiki_page.title is VARCHAR(512)
WIKI_PAGE: Final = AggregateTable("wiki_page", "wiki_page")

Relations = Mapping[str, Sequence[Mapping[str, Any]]]
"""What ``relations_json`` holds: related entities keyed by relation type (docs/design.md,
"The wiki_page document")."""


@dataclass(frozen=True, slots=True)
class Page:
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
    """The demo's ``wiki_page`` type on `AsyncAggregateWriter`. Every change returns the revision it
    committed (the one to wait for); refusals and ``delete_outbox_row`` as `AggregateWriter`'s."""

    def __init__(
        self, pool: aiomysql.Pool, *, clock: WallClock = utc_now, delete_outbox_row: bool = False
    ) -> None:
        self._pool = pool
        self._writer = AsyncAggregateWriter(
            pool, WIKI_PAGE, clock=clock, delete_outbox_row=delete_outbox_row
        )

    async def create(self, page_id: str, title: str, content: str, relations: Relations) -> int:
        """Create the page at revision ``floor + 1`` (1 unless hard-deleted before)."""
        _check_page(page_id, title)
        values = {"title": title, "content": content, "relations_json": _relations_json(relations)}
        return await self._run(self._writer.create, page_id, values)

    async def update(
        self,
        page_id: str,
        *,
        title: str | None = None,
        content: str | None = None,
        relations: Relations | None = None,
    ) -> int:
        """Change the given fields (at least one); a soft-deleted page stays deleted."""
        if title is None and content is None and relations is None:
            raise ValueError("update needs at least one of title, content, relations")
        _check_page(page_id, title)
        encoded = None if relations is None else _relations_json(relations)
        given = {"title": title, "content": content, "relations_json": encoded}
        values = {column: value for column, value in given.items() if value is not None}
        return await self._run(self._writer.update, page_id, values)

    async def soft_delete(self, page_id: str) -> int:
        return await self._run(self._writer.soft_delete, page_id)

    async def restore(self, page_id: str) -> int:
        return await self._run(self._writer.restore, page_id)

    async def hard_delete(self, page_id: str) -> int:
        return await self._run(self._writer.hard_delete, page_id)

    async def get(self, page_id: str) -> Page | None:
        """The page as committed now (soft-deleted included), or None."""
        async with transaction(self._pool) as conn, conn.cursor(aiomysql.DictCursor) as cur:
            with translate_errors("read wiki_page"):
                await cur.execute(
                    "SELECT id, title, content, relations_json, revision, deleted_at, updated_at"
                    " FROM wiki_page WHERE id = %s",
                    (page_id,),
                )
                row = await cur.fetchone()
        if row is None:
            return None
        relations = orjson.loads(row.pop("relations_json"))
        return Page(**row, relations=relations)

    @staticmethod
    async def _run(
        change: Callable[..., AbstractAsyncContextManager[Change]], page_id: str, *values: Any
    ) -> int:
        _check_page(page_id)  # again for create and update, which check it first
        async with change(page_id, *values) as open_change:
            pass
        return open_change.revision


def _relations_json(relations: Relations) -> str:
    """``relations_json``'s JSON object; only the shape is checked (TypeError)."""
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


def _check_page(page_id: str, title: str | None = None) -> None:
    if not page_id or len(page_id) > MAX_PAGE_ID_LENGTH:
        raise ValueError(f"page id must have 1..{MAX_PAGE_ID_LENGTH} characters, got {page_id!r}")
    if title is not None and len(title) > MAX_TITLE_LENGTH:
        raise ValueError(f"title must have at most {MAX_TITLE_LENGTH} characters")
