"""A watcher of documents in the index during a fan-out: it reads them over and over and
records any that moved backwards, by version, or at one version by a rank of its content (the
referenced name it shows: an older name ranks lower)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from elasticsearch import AsyncElasticsearch
from searchsync.search.client import make_es_client

from tests.integration.consumer_harness import InProcessConsumer

__all__ = ["Rank", "Watcher", "watch_docs"]

Rank = Callable[[Mapping[str, Any]], int]
"""A document's source -> how new the referenced fields it shows are (-1: none known)."""


class Watcher:
    """Reads every watched document over and over; `moved_back` lists any version (or, at one
    version, any `rank`) that went backwards."""

    def __init__(self, es: AsyncElasticsearch, alias: str, ids: list[str], rank: Rank):
        self._es, self._alias, self.ids, self._rank = es, alias, ids, rank
        self._seen: dict[str, tuple[int, int]] = {}
        self.moved_back: list[str] = []
        self.reads = 0

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            resp = await self._es.mget(index=self._alias, ids=list(self.ids))
            self.reads += 1
            for doc in resp["docs"]:
                if not doc.get("found"):
                    continue
                now = (doc["_version"], self._rank(doc["_source"]))
                was = self._seen.get(doc["_id"])
                if was is not None and (now[0] < was[0] or (now[0] == was[0] and now[1] < was[1])):
                    self.moved_back.append(f"{doc['_id']}: {was} -> {now}")
                self._seen[doc["_id"]] = now
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def watch_docs(
    consumer: InProcessConsumer, kind: str, ids: list[str], rank: Rank
) -> AsyncIterator[Watcher]:
    """Watch `ids` of type `kind` in the consumer's alias for the block; fail if any moved back."""
    es = make_es_client(consumer.settings)
    watcher = Watcher(es, consumer.settings.alias(kind), ids, rank)
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    try:
        yield watcher
    finally:
        stop.set()
        await task
        await es.close()
    assert watcher.reads > 0
    assert watcher.moved_back == [], watcher.moved_back[:5]
