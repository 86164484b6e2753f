"""Commit -> searchable under paced writes, shared by the rebuild and the repair benchmarks.

`paced_searchable` runs the pipeline benchmark's paced writer as a child process (so its CPU does
not queue behind this event loop; CLOCK_MONOTONIC is shared by both processes), records when each
page's transaction returned, and polls ``_search`` with an ``ids`` query until every written page
is visible. The pipeline benchmark's own lag phase measures more (Kafka arrival, the realtime
acknowledgement) and keeps its own loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from elasticsearch import AsyncElasticsearch

from bench.pipeline_bench import quantile

SEARCH_CHUNK: Final = 1_000
POLL_S: Final = 0.05
SETTLE_S: Final = 30.0  # how long pages may take to become searchable after the writers end


@dataclass
class PacedRun:
    """What one paced run saw: commit and first-seen times per page, the writers' span."""

    committed: dict[str, float] = field(default_factory=dict)
    seen: dict[str, float] = field(default_factory=dict)
    bounds: dict[str, float] = field(default_factory=dict)
    writer_exit: int | None = None
    timed_out: bool = False  # some pages were not searchable within SETTLE_S

    @property
    def lags(self) -> list[float]:
        return sorted(self.seen[i] - self.committed[i] for i in self.committed if i in self.seen)

    @property
    def rate(self) -> float:
        span = self.bounds.get("END", math.nan) - self.bounds.get("START", math.nan)
        return len(self.committed) / span if span > 0 else math.nan

    def summary(self) -> dict[str, float]:
        lags = self.lags
        return {
            "pages": float(len(self.committed)),
            "rate": self.rate,
            "unseen": float(len(self.committed) - len(lags)),
            "p50_s": quantile(lags, 0.5),
            "p99_s": quantile(lags, 0.99),
            "max_s": lags[-1] if lags else math.nan,
        }


async def paced_searchable(
    client: AsyncElasticsearch,
    index: str,
    spec: Mapping[str, Any],
    *,
    env: Mapping[str, str] | None = None,
    check: Callable[[], None] = lambda: None,
) -> PacedRun:
    """Run the paced writer with `spec` (prefix, first, count, rate, writers, seconds) and wait
    until its pages are searchable in `index`; `check` runs each poll (e.g. "the consumer is
    still alive")."""
    run = PacedRun()
    writers = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.pipeline_bench",
        "--paced-writer",
        json.dumps(dict(spec)),
        stdout=asyncio.subprocess.PIPE,
        env=None if env is None else dict(env),
    )
    done = asyncio.Event()

    async def read_commits() -> None:
        assert writers.stdout is not None
        async for raw in writers.stdout:
            name, _, at = raw.decode().strip().partition(" ")
            if name in ("START", "END"):
                run.bounds[name] = float(at)
            elif at:
                run.committed[name] = float(at)

    async def poller() -> None:
        while not (done.is_set() and len(run.seen) == len(run.committed)):
            check()
            unseen = [i for i in run.committed if i not in run.seen]
            for start in range(0, len(unseen), SEARCH_CHUNK):
                chunk = unseen[start : start + SEARCH_CHUNK]
                resp: Any = await client.search(
                    index=index, query={"ids": {"values": chunk}}, size=len(chunk), source=False
                )
                now = time.monotonic()
                for hit in resp["hits"]["hits"]:
                    run.seen.setdefault(hit["_id"], now)
            await asyncio.sleep(POLL_S)

    poll = asyncio.create_task(poller())
    try:
        await read_commits()
        run.writer_exit = await writers.wait()
        done.set()
        await asyncio.wait_for(asyncio.shield(poll), SETTLE_S)
    except TimeoutError:
        run.timed_out = True
    finally:
        poll.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await poll
        if writers.returncode is None:
            writers.kill()
            await writers.wait()
    return run
