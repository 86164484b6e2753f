"""The recovery benchmark's load: paced writers that keep going through a fault, a poller that
keeps looking, and the figures read off what they saw.

The writers are the pipeline benchmark's paced-writer child (``tolerant``: a write MariaDB refuses
skips its page). Each page's commit time is what the child printed when its transaction returned;
its searchable time is when a ``_search`` by id first found it (polled every ~50 ms; a failing
search, Elasticsearch down, is retried). CLOCK_MONOTONIC is shared by both processes.

Lag at time t = the age of the oldest page committed but not yet searchable at t. "Back under X
at T" means the lag stays below X from T on: T is the last searchable time of a page whose lag
was X or more (the lag is >= X from its commit + X until it is found).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from elasticsearch import AsyncElasticsearch

SEARCH_CHUNK: Final = 1_000
POLL_S: Final = 0.05


@dataclass(frozen=True, slots=True)
class Recovery:
    """How long after `up_at` the lag stayed below `threshold_s` for good."""

    seconds: float  # 0.0: under the threshold from `up_at` on; NaN: some page never found
    from_fault_s: float  # the same point counted from the fault (NaN likewise)
    peak_lag_s: float  # the largest lag of a page committed in the window
    pages: int  # pages committed in the window
    unseen: int  # of which never searchable


def recovery(
    committed: dict[str, float],
    seen: dict[str, float],
    *,
    fault_at: float,
    up_at: float,
    until: float,
    threshold_s: float,
) -> Recovery:
    """Recovery from the pages committed in [`fault_at` - 5 s, `until`] (the outage's backlog
    included): seconds from `up_at` to the last searchable time of a page whose lag was at least
    `threshold_s`. A page never found leaves the lag unknown: NaN."""
    window = {i: c for i, c in committed.items() if fault_at - 5.0 <= c <= until}
    lags = {i: seen[i] - c for i, c in window.items() if i in seen}
    unseen = len(window) - len(lags)
    peak = max(lags.values(), default=0.0)
    if unseen:
        oldest = min(c for i, c in window.items() if i not in seen)
        return Recovery(math.nan, math.nan, max(peak, until - oldest), len(window), unseen)
    late = [seen[i] for i, lag in lags.items() if lag >= threshold_s]
    back = max(late, default=fault_at)
    return Recovery(max(0.0, back - up_at), max(0.0, back - fault_at), peak, len(window), 0)


@dataclass
class Load:
    """Paced writers creating pages `prefix`0, 1, ... at `rate`/s until `stop`, and the poller."""

    es: AsyncElasticsearch
    alias: str
    prefix: str
    rate: float
    writers: int
    check: Callable[[], None] = lambda: None  # each poll, e.g. "the consumer is alive"
    committed: dict[str, float] = field(default_factory=dict)
    seen: dict[str, float] = field(default_factory=dict)
    failed_polls: int = 0
    polls: list[tuple[float, int, int, str]] = field(default_factory=list)  # at, asked, found, err
    _child: Any = None
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _writing: bool = True

    async def start(self) -> None:
        spec = {
            "prefix": self.prefix,
            "first": 0,
            "count": 10**9,
            "rate": self.rate,
            "writers": self.writers,
            "seconds": 10**6,
            "tolerant": True,
        }
        self._child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.pipeline_bench",
            "--paced-writer",
            json.dumps(spec),
            stdout=asyncio.subprocess.PIPE,
        )
        self._tasks = [asyncio.create_task(self._read()), asyncio.create_task(self._poll())]

    async def _read(self) -> None:
        assert self._child is not None and self._child.stdout is not None
        async for raw in self._child.stdout:
            name, _, at = raw.decode().strip().partition(" ")
            if at and name not in ("START", "END"):
                self.committed[name] = float(at)

    async def _poll(self) -> None:
        while self._writing or len(self.seen) < len(self.committed):
            self.check()
            unseen = [i for i in list(self.committed) if i not in self.seen]
            before = len(self.seen)
            err = ""
            try:
                for start in range(0, len(unseen), SEARCH_CHUNK):
                    chunk = unseen[start : start + SEARCH_CHUNK]
                    resp: Any = await self.es.search(
                        index=self.alias,
                        query={"ids": {"values": chunk}},
                        size=len(chunk),
                        source=False,
                    )
                    now = time.monotonic()
                    for hit in resp["hits"]["hits"]:
                        self.seen.setdefault(hit["_id"], now)
            except Exception as exc:
                self.failed_polls += 1  # Elasticsearch down or restarting: look again
                err = type(exc).__name__
                await asyncio.sleep(0.5)
            self.polls.append((time.monotonic(), len(unseen), len(self.seen) - before, err))
            await asyncio.sleep(POLL_S)

    async def stop(self, settle_s: float) -> None:
        """Stop the writers; wait up to `settle_s` for their pages to become searchable."""
        self._writing = False
        if self._child is not None and self._child.returncode is None:
            self._child.terminate()
            await self._child.wait()
        reader, poller = self._tasks
        await reader
        try:
            await asyncio.wait_for(asyncio.shield(poller), settle_s)
        except TimeoutError:
            pass
        finally:
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller
