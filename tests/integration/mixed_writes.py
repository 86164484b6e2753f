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

    # authors

    async def author(self, author_id: str, name: str) -> int:
        """Create the author, or rename it; its committed revision."""
        if author_id in self.state:
            change = self.authors.update(author_id, {"name": name})
            self.done["author rename"] += 1
        else:
            change = self.authors.create(author_id, {"name": name})
            self.state[author_id] = LIVE
        async with change as c:
            pass
        return c.revision

    # articles

    async def create_article(self, article_id: str, author_id: str | None) -> None:
        values = {"title": article_id, "body": "body", "author_id": author_id}
        async with self.articles.create(article_id, values) as c:
            await _replace_tags(c, self._tags())
        self.state[article_id] = LIVE
        self.done["article create"] += 1

    async def repoint(self, article_id: str, author_id: str | None) -> None:
        async with self.articles.update(article_id, {"author_id": author_id}):
            pass
        self.done["article re-point"] += 1

    async def delete_article(self, article_id: str, *, hard: bool) -> None:
        """Soft-delete the live article, or hard-delete it."""
        if hard:
            await self._article_delete_or_restore(article_id, hard=True)
        else:
            async with self.articles.soft_delete(article_id):
                pass
            self.state[article_id] = SOFT
            self.done["article soft delete"] += 1

    async def article_step(self, article_id: str, authors: list[str | None]) -> None:
        """One change of the article that its state allows."""
        state, roll = self.state.get(article_id, GONE), self.rng.random()
        if state == GONE:
            await self.create_article(article_id, self.rng.choice(authors))
        elif state == SOFT:
            await self._article_delete_or_restore(article_id, hard=roll < 0.4)
        elif roll < 0.45:  # the children only: the article's revision rises with them
            async with self.articles.update(article_id) as c:
                await _replace_tags(c, self._tags())
            self.done["article tags"] += 1
        elif roll < 0.75:
            await self.repoint(article_id, self.rng.choice(authors))
        elif roll < 0.85:
            async with self.articles.update(article_id, {"title": f"t{roll:.6f}"}) as c:
                await _replace_tags(c, self._tags())
            self.done["article title+tags"] += 1
        else:
            await self.delete_article(article_id, hard=False)

    async def _article_delete_or_restore(self, article_id: str, *, hard: bool) -> None:
        if hard:
            async with self.articles.hard_delete(article_id) as c:
                await c.cursor.execute(
                    "DELETE FROM article_tag WHERE article_id = %s", (article_id,)
                )
            self.state[article_id] = GONE
            self.done["article hard delete"] += 1
        else:
            async with self.articles.restore(article_id):
                pass
            self.state[article_id] = LIVE
            self.done["article restore"] += 1

    # pages

    async def page_step(self, page_id: str) -> None:
        """One change of the wiki page that its state allows (a create after a hard delete
        continues above the id's floor)."""
        state, roll = self.state.get(page_id, GONE), self.rng.random()
        if state == GONE:
            relations = self._relations()
            await self.pages.create(page_id, f"page {roll:.6f}", "content", relations)
            self.state[page_id] = LIVE
            self.done["page create"] += 1
        elif state == SOFT:
            if roll < 0.5:
                await self.pages.hard_delete(page_id)
                self.state[page_id] = GONE
                self.done["page hard delete"] += 1
            else:
                await self.pages.restore(page_id)
                self.state[page_id] = LIVE
                self.done["page restore"] += 1
        elif roll < 0.6:
            await self.pages.update(page_id, content=f"c{roll:.6f}", relations=self._relations())
            self.done["page update"] += 1
        elif roll < 0.8:
            await self.pages.soft_delete(page_id)
            self.state[page_id] = SOFT
            self.done["page soft delete"] += 1
        else:
            await self.pages.hard_delete(page_id)
            self.state[page_id] = GONE
            self.done["page hard delete"] += 1

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
