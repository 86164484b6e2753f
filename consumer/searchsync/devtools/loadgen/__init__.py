"""A load generator: application traffic through `PageWriter`, planned as a pure function of the
seed. An operation that does not apply (restoring a live page) is skipped; deadlocks and lock wait
timeouts are retried, a lost connection is not (the commit may have happened). With fresh ids,
``sum(report.final_revisions.values()) == report.changes`` (one outbox row per change)."""

from __future__ import annotations

import asyncio
import enum
import itertools
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from searchsync.errors import (
    AggregateExists,
    AggregateNotFound,
    AggregateStateConflict,
    ConfigError,
    ErrorCode,
    TransientError,
)
from searchsync.writer import PageWriter, Relations

_RETRYABLE: Final = frozenset({ErrorCode.MYSQL_DEADLOCK, ErrorCode.MYSQL_LOCK_TIMEOUT})
_MAX_ATTEMPTS: Final = 5
_CHARACTERS: Final = (
    *(("character_qixia", "齐夏"), ("character_lin", "林檎"), ("character_tiankai", "天开")),
    *(("character_zhang", "张山"), ("character_yun", "云瑶"), ("character_chen", "陈俊南")),
)
_PLACES: Final = (("place_zhongyan", "终焉之地"), ("place_library", "图书馆"))
_WORDS: Final = (
    *("终焉之地", "游戏", "规则", "参与者", "生肖", "记忆", "回响", "道"),
    *("the", "game", "rule", "memory", "echo", "city"),
)


class OpKind(enum.StrEnum):
    UPDATE = "update"
    SOFT_DELETE = "soft_delete"
    RESTORE = "restore"
    HARD_DELETE = "hard_delete"


@dataclass(frozen=True, slots=True)
class PlannedOp:
    """One planned operation. `title`/`content`/`relations` are the new values of an update."""

    kind: OpKind
    page_id: str
    title: str | None = None
    content: str | None = None
    relations: Relations | None = None


@dataclass(slots=True)
class LoadgenReport:
    """What happened. `final_revisions`: every page's last revision (a hard-deleted page's is its
    tombstone's); `final_deleted`: whether it ended deleted; `hard_deleted_ids`: hard-deleted."""

    pages: int
    planned: int
    created: int = 0
    updated: int = 0
    soft_deleted: int = 0
    restored: int = 0
    hard_deleted: int = 0
    recreated: int = 0
    skipped: int = 0
    retries: int = 0
    final_revisions: dict[str, int] = field(default_factory=dict)
    final_deleted: dict[str, bool] = field(default_factory=dict)
    hard_deleted_ids: set[str] = field(default_factory=set)

    @property
    def changes(self) -> int:
        """Committed changes, which is also the number of outbox rows written."""
        done = (self.created, self.updated, self.soft_deleted, self.restored, self.hard_deleted)
        return sum(done) + self.recreated


def page_ids(id_prefix: str, pages: int) -> list[str]:
    return [f"{id_prefix}{i:06d}" for i in range(pages)]


def plan_operations(
    *, ids: list[str], updates: int, delete_ratio: float, hard_delete_ratio: float, seed: int
) -> list[PlannedOp]:
    """The operations for `seed`: soft delete and restore each with probability `delete_ratio`,
    hard delete with `hard_delete_ratio`, update otherwise (pure; no I/O)."""
    rng = random.Random(seed)
    ops: list[PlannedOp] = []
    for _ in range(updates):
        page_id = rng.choice(ids)
        roll = rng.random()
        if roll < hard_delete_ratio:
            ops.append(PlannedOp(OpKind.HARD_DELETE, page_id))
        elif roll < hard_delete_ratio + delete_ratio:
            ops.append(PlannedOp(OpKind.SOFT_DELETE, page_id))
        elif roll < hard_delete_ratio + 2 * delete_ratio:
            ops.append(PlannedOp(OpKind.RESTORE, page_id))
        else:
            title, content, relations = _page_body(rng, page_id)
            which = rng.randrange(4)  # 0: content only, 1: title+content, 2: relations, 3: all
            ops.append(
                PlannedOp(
                    OpKind.UPDATE,
                    page_id,
                    title=title if which in (1, 3) else None,
                    content=content if which != 2 else None,
                    relations=relations if which >= 2 else None,
                )
            )
    return ops


async def run_loadgen(
    writer: PageWriter,
    *,
    pages: int,
    updates: int,
    concurrency: int,
    delete_ratio: float,
    seed: int,
    id_prefix: str,
    progress: Callable[[int, int], None] | None = None,
    hard_delete_ratio: float = 0.0,
) -> LoadgenReport:
    """Create `pages` fresh pages (an existing id raises `AggregateExists`), run `updates` planned
    operations and report; `progress(done, total)` is called after every operation."""
    for key, value, least in (
        ("pages", pages, 1),
        ("updates", updates, 0),
        ("concurrency", concurrency, 1),
    ):
        if value < least:
            raise ConfigError(f"loadgen.{key}", f"an integer >= {least}", value)
    if delete_ratio < 0 or hard_delete_ratio < 0 or 2 * delete_ratio + hard_delete_ratio > 1:
        raise ConfigError(
            "loadgen.delete_ratio",
            "ratios >= 0 with 2 * delete_ratio + hard_delete_ratio <= 1",
            (delete_ratio, hard_delete_ratio),
        )
    ids = page_ids(id_prefix, pages)
    rng = random.Random(seed)
    bodies = [_page_body(rng, page_id) for page_id in ids]
    plan = plan_operations(
        ids=ids,
        updates=updates,
        delete_ratio=delete_ratio,
        hard_delete_ratio=hard_delete_ratio,
        seed=rng.randrange(2**63),
    )
    report = LoadgenReport(pages=pages, planned=updates)
    last_revision: Counter[str] = Counter()
    finished = itertools.count(1)

    def step() -> None:
        if progress is not None:
            progress(next(finished), pages + updates)

    async def attempt(call: Callable[[], Awaitable[int]]) -> int:
        for _ in range(_MAX_ATTEMPTS - 1):
            try:
                return await call()
            except TransientError as exc:
                if exc.code not in _RETRYABLE:
                    raise
                report.retries += 1
        return await call()

    async def create(index: int) -> None:
        await attempt(lambda: writer.create(ids[index], *bodies[index]))
        report.created += 1
        step()

    async def change(op: PlannedOp) -> int:
        if op.kind is not OpKind.UPDATE:  # the writer's method of that name; counted as "<kind>d"
            revision: int = await attempt(lambda: getattr(writer, op.kind.value)(op.page_id))
            setattr(report, f"{op.kind.value}d", getattr(report, f"{op.kind.value}d") + 1)
            return revision
        try:
            revision = await attempt(
                lambda: writer.update(
                    op.page_id, title=op.title, content=op.content, relations=op.relations
                )
            )
            report.updated += 1
        except AggregateNotFound:  # hard-deleted earlier: the update brings it back
            title = op.title or f"page {op.page_id}"
            revision = await attempt(
                lambda: writer.create(op.page_id, title, op.content or "", op.relations or {})
            )
            report.recreated += 1
        return revision

    async def apply(op: PlannedOp) -> None:
        try:
            revision = await change(op)
        except (AggregateStateConflict, AggregateExists, AggregateNotFound):
            report.skipped += 1
        else:
            last_revision[op.page_id] = max(last_revision[op.page_id], revision)
        step()

    await _run_all(concurrency, (create(i) for i in range(pages)))
    await _run_all(concurrency, (apply(op) for op in plan))

    for page_id in ids:
        page = await writer.get(page_id)
        if page is None:
            report.hard_deleted_ids.add(page_id)
        report.final_deleted[page_id] = page is None or page.is_deleted
        report.final_revisions[page_id] = last_revision[page_id] if page is None else page.revision
    return report


async def _run_all(concurrency: int, jobs: Iterator[Any]) -> None:
    """Run the coroutines of `jobs` with at most `concurrency` in flight; the first error wins."""

    async def worker() -> None:
        for job in jobs:  # shared: each job is taken by exactly one worker
            await job

    async with asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(worker())


def _page_body(rng: random.Random, page_id: str) -> tuple[str, str, Relations]:
    title = f"{rng.choice(_WORDS)} {page_id}"
    content = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 40)))
    relations: dict[str, list[dict[str, Any]]] = {
        "RELATED_CHARACTER": _entities("character", rng.sample(_CHARACTERS, rng.randint(0, 3)))
    }
    if places := rng.sample(_PLACES, rng.randint(0, 1)):
        relations["RELATED_PLACE"] = _entities("place", places)
    return title, content, relations


def _entities(entity_type: str, chosen: list[tuple[str, str]]) -> list[dict[str, Any]]:
    return [
        {"entity_id": entity_id, "entity_type": entity_type, "title": title}
        for entity_id, title in chosen
    ]
