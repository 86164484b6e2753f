"""The application side of tests/integration/test_mixed_aggregates_e2e.py: every change of
``wiki_page``, ``article`` (with its ``article_tag`` children) and ``author`` goes through the
application-side writer (`PageWriter`, `AsyncAggregateWriter`), so each one bumps its root's
revision and appends its outbox event in the same transaction.

`MixedWrites` keeps a model of the rows it changed (live, soft-deleted or gone) so that each step
is one the writer accepts, and counts what it did. Each id is changed by one task at a time.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from typing import Any

import aiomysql
from searchsync.writer import AggregateTable, AsyncAggregateWriter, Change, PageWriter

__all__ = ["ARTICLE", "AUTHOR", "MixedWrites"]

ARTICLE = AggregateTable("article", "article")
AUTHOR = AggregateTable("author", "author")
TAGS = ("rules", "lore", "游戏", "map", "boss", "guide", "patch")
LIVE, SOFT, GONE = "live", "soft", "gone"  # an id not in the model has never been created


class MixedWrites:
    """Random but valid changes (seeded) of the rows of one test run; `done` counts each kind."""

    def __init__(self, pool: aiomysql.Pool, seed: int) -> None:
        self.pages = PageWriter(pool)
        self.articles = AsyncAggregateWriter(pool, ARTICLE)
        self.authors = AsyncAggregateWriter(pool, AUTHOR)
        self.rng = random.Random(seed)
        self.state: dict[str, str] = {}
        self.done: Counter[str] = Counter()

    def _did(self, aggregate_id: str, what: str, state: str | None = None) -> None:
        self.done[what] += 1
        if state is not None:
            self.state[aggregate_id] = state

    async def author(self, author_id: str, name: str) -> None:
        """Create the author, or rename it."""
        if author_id in self.state:
            async with self.authors.update(author_id, {"name": name}):
                pass
            self._did(author_id, "author rename")
        else:
            async with self.authors.create(author_id, {"name": name}):
                pass
            self._did(author_id, "author create", LIVE)

    async def create_article(self, article_id: str, author_id: str | None) -> None:
        values = {"title": article_id, "body": "body", "author_id": author_id}
        async with self.articles.create(article_id, values) as c:
            await _replace_tags(c, self._tags())
        self._did(article_id, "article create", LIVE)

    async def repoint(self, article_id: str, author_id: str | None) -> None:
        async with self.articles.update(article_id, {"author_id": author_id}):
            pass
        self._did(article_id, "article re-point")

    async def delete_article(self, article_id: str, *, hard: bool) -> None:
        """Hard-delete the article (its tags with it), or soft-delete it (live)."""
        if hard:
            async with self.articles.hard_delete(article_id) as c:
                await c.cursor.execute(
                    "DELETE FROM article_tag WHERE article_id = %s", (article_id,)
                )
            self._did(article_id, "article hard delete", GONE)
        else:
            async with self.articles.soft_delete(article_id):
                pass
            self._did(article_id, "article soft delete", SOFT)

    async def article_step(self, article_id: str, authors: list[str | None]) -> None:
        """One change of the article that its state allows."""
        state, roll = self.state.get(article_id, GONE), self.rng.random()
        if state == GONE:
            await self.create_article(article_id, self.rng.choice(authors))
        elif state == SOFT and roll < 0.6:
            async with self.articles.restore(article_id):
                pass
            self._did(article_id, "article restore", LIVE)
        elif state == SOFT or roll >= 0.85:
            await self.delete_article(article_id, hard=state == SOFT)
        elif roll < 0.55:  # the children only (0.45) or with a column: the revision rises
            values = {"title": f"t{roll:.6f}"} if roll >= 0.45 else {}
            async with self.articles.update(article_id, values) as c:
                await _replace_tags(c, self._tags())
            self._did(article_id, "article tags")
        else:
            await self.repoint(article_id, self.rng.choice(authors))

    async def page_step(self, page_id: str) -> None:
        """One change of the wiki page that its state allows (a create after a hard delete
        continues above the id's floor)."""
        state, roll = self.state.get(page_id, GONE), self.rng.random()
        if state == GONE:
            title, relations = f"page {roll:.6f}", self._relations()
            await self.pages.create(page_id, title, "content", relations)
            self._did(page_id, "page create", LIVE)
        elif (state == SOFT and roll < 0.5) or (state == LIVE and roll >= 0.8):
            await self.pages.hard_delete(page_id)
            self._did(page_id, "page hard delete", GONE)
        elif state == SOFT:
            await self.pages.restore(page_id)
            self._did(page_id, "page restore", LIVE)
        elif roll < 0.6:
            await self.pages.update(page_id, content=f"c{roll:.6f}", relations=self._relations())
            self._did(page_id, "page update")
        else:
            await self.pages.soft_delete(page_id)
            self._did(page_id, "page soft delete", SOFT)

    async def for_a_while(self, seconds: float, pause_s: float, step: Any, ids: list[str]) -> None:
        """`step(id)` on random `ids`, one at a time with `pause_s` between, for `seconds`."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            await step(self.rng.choice(ids))
            await asyncio.sleep(pause_s)

    def _tags(self) -> list[str]:
        return self.rng.sample(TAGS, self.rng.randint(0, 4))

    def _relations(self) -> dict[str, list[dict[str, str]]]:
        n = self.rng.randint(0, 2)
        return {"RELATED_CHARACTER": [{"entity_id": f"c{i}", "entity_type": "character"}
                                      for i in self.rng.sample(range(5), n)]}  # fmt: skip


async def _replace_tags(change: Change, tags: list[str]) -> None:
    """The article's tags become `tags` (positions in list order): children of the change."""
    cur = change.cursor
    await cur.execute("DELETE FROM article_tag WHERE article_id = %s", (change.aggregate_id,))
    if tags:
        await cur.executemany(
            "INSERT INTO article_tag (article_id, position, tag) VALUES (%s, %s, %s)",
            [(change.aggregate_id, i, tag) for i, tag in enumerate(tags)],
        )
