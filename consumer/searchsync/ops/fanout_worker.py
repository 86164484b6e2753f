"""The fan-out worker (docs/design.md, "Fan-out"; invariants 9, 12, 16): leases a pending job,
pages the dependents' ids from MySQL and appends one REBUILD each, moving the job's cursor in the
same transaction. A crash repeats at most one page (a duplicate REBUILD is harmless); a stopped
worker's job is taken over when its lease runs out."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field
from functools import partial
from typing import Final

from searchsync.config import FanoutSettings
from searchsync.errors import TransientError
from searchsync.mysql.fanout import FanoutJob, FanoutStore
from searchsync.observability.metrics import Metrics
from searchsync.projection import Child, Projector, ProjectorRegistry, through_child
from searchsync.projection.references import dependents, referenced_types, routes

log = logging.getLogger(__name__)

_YIELD_POLL_S: Final = 0.1
"""How often a fan-out that yields to the live events looks again."""


@dataclass
class FanoutWorker:
    """Works off the pending fan-out jobs, one at a time, at most `appends_per_s` appends."""

    _store: FanoutStore
    _registry: ProjectorRegistry
    _s: FanoutSettings
    _: KW_ONLY
    metrics: Metrics | None = None
    live_age: Callable[[], float] | None = None  # the member's oldest unfinished event, seconds
    owner: str = ""  # "": a name no other worker has (host, process and a random part)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    clock: Callable[[], float] = time.monotonic
    appended: int = field(default=0, init=False)  # REBUILDs this worker appended
    _next_at: float = field(default=0.0, init=False)
    _stats_at: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self.owner = self.owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._page = max(1, min(self._s.page_size, math.ceil(self._s.appends_per_s)))

    async def run(self, stop: asyncio.Event) -> None:
        """Work off jobs until `stop` is set; a failure is logged and tried again later."""
        while not stop.is_set():
            try:
                worked = await self.run_once(stop)
                now = self.clock()
                if self.metrics is not None and (not worked or now >= self._stats_at):
                    self._stats_at = now + 10 * self._s.poll_interval_s
                    stats = await self._store.stats(referenced_types(self._registry))
                    self.metrics.fanout_jobs(pending=stats.pending, done=stats.done)
            except TransientError as exc:
                log.warning("fan-out: %s; trying again", exc.message, extra={"code": exc.code})
                worked = False
            except Exception:  # a bug must not stop the consumer beside it
                log.exception("fan-out worker failed; trying again")
                worked = False
            if not worked:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self._s.poll_interval_s)

    async def run_once(self, stop: asyncio.Event) -> bool:
        """Lease one job and page through it until done, changed or `stop`; False: none."""
        job = await self._store.claim(self.owner, self._s.lease_s, routes(self._registry))
        if job is None:
            return False
        projector, via, through = self._source(job)
        keys = (projector.id_column, projector.revision_column)
        dependents = partial(
            self._store.dependents, projector.table, via, job.target.referenced_id, keys=keys
        )
        started, logged = self.clock(), job.appended
        current: FanoutJob | None = job
        while current is not None and not stop.is_set():
            page = await dependents(current.cursor_id, self._page, through=through)
            if not page:
                if await self._store.finish(current, self.owner):
                    big = current.appended >= self._s.progress_every
                    level = logging.INFO if big else logging.DEBUG
                    _log(level, "fan-out done", current, seconds=round(self.clock() - started, 3))
                return True
            await self._pace(len(page), stop)
            current = await self._store.advance(current, self.owner, self._s.lease_s, page)
            if current is None:  # restarted by a newer revision, or taken over: lease it anew
                return True
            self.appended += len(page)
            if self.metrics is not None:
                self.metrics.fanout_appended(len(page))
            if current.appended - logged >= self._s.progress_every:
                logged = current.appended
                per_s = round(logged / max(1e-9, self.clock() - started), 1)
                _log(logging.INFO, "fan-out progress", current, per_s=per_s)
        return True

    def _source(self, job: FanoutJob) -> tuple[Projector, str, Child | None]:
        """The dependent type's projector, the column holding the referenced id and the child table
        it is a column of (None: the table's own)."""
        t = job.target
        for projector, lookup in dependents(self._registry, t.referenced_type):
            if projector.aggregate_type == t.dependent_type and lookup.name == t.lookup_name:
                return projector, lookup.via, through_child(lookup, projector.children)
        raise LookupError(
            f"no lookup {t.lookup_name!r} of {t.dependent_type} reads {t.referenced_type}"
        )

    async def _pace(self, n: int, stop: asyncio.Event) -> None:
        """At most `appends_per_s`, and only while the member keeps up with its live events: a
        page waits while the oldest unfinished one is older than `yield_above_s`."""
        if (wait := self._next_at - self.clock()) > 0:
            await self.sleep(wait)
        limit, live_age = self._s.yield_above_s, self.live_age
        while live_age is not None and limit > 0 and not stop.is_set() and live_age() > limit:
            await self.sleep(_YIELD_POLL_S)
        self._next_at = max(self.clock(), self._next_at) + n / self._s.appends_per_s


def _log(level: int, message: str, job: FanoutJob, **extra: float) -> None:
    t = job.target
    log.log(
        level,
        message,
        extra={
            "referenced": f"{t.referenced_type}:{t.referenced_id}",
            "revision": t.revision,
            "dependent_type": t.dependent_type,
            "appended": job.appended,
            **extra,
        },
    )
