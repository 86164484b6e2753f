"""The fan-out freeze (tests/faults/README.md, `fanout_freeze`; invariant 17): one author of the
run with `ARTICLES` articles; renamed once, the member rewriting the articles' REBUILDs is
frozen (SIGSTOP) mid-fan-out, the group rebalances around it, the author is renamed again and
the new owner rewrites the articles with the new name; then the frozen member is resumed
(SIGCONT) and may put the old name back at the same revision, unless the owner-epoch fence
refuses it. The checker (`fanout_check.py`) then wants every article with the last name.

Every wait is on a condition observed from outside (the index, the members' logs) with a
deadline; a condition not met by its deadline is recorded in the step's evidence, and the
member is always resumed.
"""

from __future__ import annotations

import asyncio
import signal
import time
from dataclasses import dataclass, field
from typing import Any

import aiomysql
from elasticsearch import AsyncElasticsearch
from searchsync.config import Settings
from searchsync.mysql.pool import open_pool
from searchsync.projection import registry_from_settings
from searchsync.search.admin import init_index

from tests.faults import fanout_check
from tests.faults.member_logs import ARTICLE_TOPIC, holders, let_go, outcomes, took_over
from tests.faults.members import Group
from tests.faults.proxy import Es429Proxy
from tests.integration.article_app import article_change
from tests.integration.fanout_writes import author_write

ARTICLES = 600
"""Articles of the run's author: at `APPENDS_PER_S`, a pass of its fan-out lasts seconds."""
APPENDS_PER_S = 150
AUTHOR_TOPIC = "outbox.event.author"
SLOW_ES_S = 0.3
"""How long the proxy holds each request of the article index from the first rename until the
freeze: the members spend most of their REBUILD time between the truth read and the write."""
REBALANCE_DEADLINE_S = 40.0
"""The session timeout (6 s) and the rebalance after it, with a wide margin."""
SETTLED_S = 15.0
"""How long a divergence of the articles must hold still, with no lag and no pending fan-out,
before quiescence takes it as final (no event in flight can change it any more)."""


def member_env(wiki_topic: str) -> dict[str, str]:
    """What a fan-out schedule adds to its members' environment: the article and author topics,
    the article projector, a fan-out worker that looks often, paces its appends and takes over a
    frozen worker's job soon."""
    return {
        "SEARCHSYNC_KAFKA_TOPICS": f"{wiki_topic},{ARTICLE_TOPIC},{AUTHOR_TOPIC}",
        "SEARCHSYNC_PROJECTION_MODULES": (
            "searchsync.projection.wiki_page,searchsync.examples.article"
        ),
        "SEARCHSYNC_FANOUT_POLL_INTERVAL_S": "0.1",
        "SEARCHSYNC_FANOUT_LEASE_S": "5",
        "SEARCHSYNC_FANOUT_APPENDS_PER_S": str(APPENDS_PER_S),
        "SEARCHSYNC_FANOUT_PAGE_SIZE": "10",
        # the product's default, longer than the freeze: a request in flight when the member
        # froze must not time out the moment it resumes (its write would be dropped, not sent)
        "SEARCHSYNC_ELASTICSEARCH_REQUEST_TIMEOUT_S": "30",
    }


@dataclass(slots=True)
class FanoutRig:
    """The run's author and articles, and what the freeze saw."""

    settings: Settings
    app: aiomysql.Pool  # the application's writes
    truth: aiomysql.Pool  # the consumer's user: reads search_fanout, article, author
    es: AsyncElasticsearch
    prefix: str
    partitions: int  # of the article topic
    author_id: str = ""
    articles: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    report: fanout_check.ArticleReport | None = None
    _last: tuple[int, tuple[str, ...]] | None = None
    _since: float = 0.0

    @classmethod
    async def open(
        cls, settings: Settings, app: aiomysql.Pool, es: AsyncElasticsearch, prefix: str, parts: int
    ) -> FanoutRig:
        """The rig with a pool of the consumer's user and the article index made."""
        rig = cls(settings, app, await open_pool(settings.mysql, maxsize=2), es, prefix, parts)
        await rig.init_index()
        return rig

    async def close(self) -> None:
        self.truth.close()
        await self.truth.wait_closed()

    async def evidence(self) -> tuple[fanout_check.ArticleReport, dict[str, int]]:
        """The final article check, and its counts for the results."""
        r = await fanout_check.check(self.truth, self.es, self.alias, self.prefix)
        counts = {
            "rows": r.rows,
            "documents": r.documents,
            "authors": r.authors,
            "divergent": r.divergent,
            "stale": r.stale_author,
        }
        return r, counts

    @property
    def alias(self) -> str:
        return self.settings.alias("article")

    @property
    def index(self) -> str:
        return f"{self.alias}_v1"

    async def init_index(self) -> None:
        projector = registry_from_settings(self.settings.projection).get("article")
        await init_index(
            self.es, self.alias, projector.mapping, schema_version=projector.schema_version
        )

    async def seed(self, deadline_s: float = 90.0) -> str:
        """The author (first name) and its articles, all indexed."""
        self.author_id = f"{self.prefix}author"
        self.articles = [f"{self.prefix}a{i:04d}" for i in range(ARTICLES)]
        await self._rename("name 0")
        gate = asyncio.Semaphore(6)

        async def one(article_id: str) -> None:
            async with gate:
                await article_change(
                    self.app, article_id, author_id=self.author_id, title=f"title {article_id}"
                )

        await asyncio.gather(*(one(a) for a in self.articles))
        t0 = time.monotonic()
        got = await self._wait_count("name 0", lambda n: n == ARTICLES, deadline_s)
        return f"author {self.author_id}, {got}/{ARTICLES} articles indexed in {_ago(t0)}"

    async def freeze(self, group: Group, proxy: Es429Proxy) -> str:
        """The step itself; its evidence as one line."""
        notes: list[str] = []
        if len(group.live) < 2:  # a new owner must be there to take the partitions over
            group.top_up(2)
            notes.append("started a second member")
        t_wait = time.monotonic()
        held = await _wait(lambda: holders(group, self.partitions), REBALANCE_DEADLINE_S)
        if not held:
            return "; ".join([*notes, "the group never settled: no freeze"])
        notes.append(f"group settled after {_ago(t_wait)}")
        target, parts = max(held.items(), key=lambda kv: (len(kv[1]), -kv[0].number))
        n1, n2 = f"name {len(self.names)}", f"name {len(self.names) + 1}"
        t0 = time.monotonic()
        proxy.delay_marker, proxy.delay_s = self.alias.encode(), SLOW_ES_S
        try:
            await self._rename(n1)
            busy = await self._wait_count(n1, lambda n: 0 < n < ARTICLES, 30.0, interval_s=0.02)
            sizes = {m.number: m.log_path.stat().st_size for m in group.live}
            target.signal(signal.SIGSTOP)
        finally:
            proxy.delay_s = 0.0
        notes.append(
            f"renamed to {n1!r} (article requests held {SLOW_ES_S}s); {busy}/{ARTICLES}"
            f" articles with it after {_ago(t0)}"
        )
        t_freeze = time.monotonic()
        notes.append(f"SIGSTOP member {target.number} (holding {sorted(parts)})")
        try:
            taker = await _wait(
                lambda: took_over(group, target, parts, sizes), REBALANCE_DEADLINE_S
            )
            seen = f"member {taker} assigned {sorted(parts)}" if taker else "no take-over seen"
            notes.append(f"rebalance after {_ago(t_freeze)}: {seen}")
            await self._rename(n2)
            t2 = time.monotonic()
            got = await self._wait_count(n2, lambda n: n == ARTICLES, 45.0)
            notes.append(f"renamed to {n2!r}; {got}/{ARTICLES} articles with it after {_ago(t2)}")
        finally:
            target.signal(signal.SIGCONT)
        notes.append(f"SIGCONT member {target.number} after {_ago(t_freeze)} frozen")
        gone = await _wait(lambda: let_go(target, sizes[target.number]), 20.0)
        notes.append(f"it logged {gone or 'no revoke or loss within 20s'}")
        after = outcomes(target, sizes[target.number], self.prefix)
        notes.append(f"its article outcomes since the freeze: {after or 'none'}")
        return "; ".join(notes)

    async def settled(self) -> tuple[bool, str]:
        """Quiescence of the fan-out: no pending job for the run's author, and the articles equal
        the truth, or a divergence that held still for `SETTLED_S` (final)."""
        pending = await fanout_check.pending_jobs(self.truth, self.author_id)
        if pending:
            self._last = None
            return False, f"{pending} pending fan-out job(s) of {self.author_id}"
        report = await fanout_check.check(self.truth, self.es, self.alias, self.prefix)
        self.report = report
        if report.divergent == 0:
            return True, ""
        now, key = time.monotonic(), (report.divergent, tuple(report.examples))
        if key != self._last:
            self._last, self._since = key, now
        why = f"articles divergent {report.divergent}: {report.examples[:3]}"
        return now - self._since >= SETTLED_S, why

    async def _rename(self, name: str) -> None:
        await author_write(self.app, self.author_id, name)
        self.names.append(name)

    async def _count(self, name: str) -> int:
        await self.es.indices.refresh(index=self.alias)
        resp: Any = await self.es.count(
            index=self.alias,
            query={
                "bool": {
                    "filter": [
                        {"prefix": {"id": self.prefix}},
                        {"term": {"author_name.keyword": name}},
                    ]
                }
            },
        )
        return int(resp["count"])

    async def _wait_count(
        self, name: str, ok: Any, deadline_s: float, *, interval_s: float = 0.2
    ) -> int:
        """Wait until `ok(count of the run's articles with `name`)`; the last count."""
        end = time.monotonic() + deadline_s
        while True:
            n = await self._count(name)
            if ok(n) or time.monotonic() > end:
                return n
            await asyncio.sleep(interval_s)


async def _wait(probe: Any, deadline_s: float, interval_s: float = 0.2) -> Any:
    """`probe()`'s first truthy answer, or None at the deadline."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        got = probe()
        if got:
            return got
        await asyncio.sleep(interval_s)
    return None


def _ago(t0: float) -> str:
    return f"{time.monotonic() - t0:.1f}s"
