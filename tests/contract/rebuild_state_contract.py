"""The `RebuildStateStore` (``search_rebuild_state``) contract: each case takes a
`RebuildStateWorld` and runs unchanged against `FakeRebuildState`
(tests/unit/test_mysql_contracts.py) and `MysqlRebuildState` on MariaDB
(tests/integration/test_mysql_contracts_real.py). Each case's aliases start with the world's
`prefix`, and a case leaves none of them unfinished.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Protocol

import pytest
from searchsync.errors import OperationRefused
from searchsync.ops.rebuild.records import RebuildRecord, RebuildStateStore, Status

from tests.fakes.rebuild_state import FakeRebuildState

T0 = datetime(2026, 3, 1, 12, 0, 0, 123456)  # naive UTC, as the columns hold it


class RebuildStateWorld(Protocol):
    store: RebuildStateStore
    prefix: str


class FakeRebuildStateWorld:
    def __init__(self, prefix: str = "c_") -> None:
        self.store = FakeRebuildState()
        self.prefix = prefix


def record(w: RebuildStateWorld, alias: str, **changes: Any) -> RebuildRecord:
    fresh = RebuildRecord(
        rebuild_id=uuid.uuid4().hex,
        aggregate_type="wiki_page",
        alias=w.prefix + alias,
        source_index=f"{w.prefix}{alias}_v1",
        target_index=f"{w.prefix}{alias}_v2",
        schema_version=2,
        catchup_group=f"{w.prefix}{alias}-catchup",
        watermark={("outbox.event.wiki_page", 0): 12, ("outbox.event.wiki_page", 1): 0},
        last_id=None,
        rows_done=0,
        rows_failed=0,
        status=Status.BACKFILLING,
        message=None,
        started_at=T0,
        updated_at=T0,
    )
    return replace(fresh, **changes)


async def contract_a_created_record_is_the_unfinished_one(w: RebuildStateWorld) -> None:
    assert await w.store.unfinished(w.prefix + "a") is None
    created = record(w, "a")
    await w.store.create(created)
    assert await w.store.unfinished(w.prefix + "a") == created
    assert await w.store.unfinished(w.prefix + "b") is None
    await w.store.save(replace(created, status=Status.ABANDONED, finished_at=T0))


async def contract_a_second_unfinished_rebuild_is_refused(w: RebuildStateWorld) -> None:
    first = record(w, "a")
    await w.store.create(first)
    with pytest.raises(OperationRefused):
        await w.store.create(record(w, "a"))
    assert await w.store.unfinished(w.prefix + "a") == first
    await w.store.save(replace(first, status=Status.ABANDONED, finished_at=T0))


async def contract_save_stores_progress(w: RebuildStateWorld) -> None:
    created = record(w, "a")
    await w.store.create(created)
    later = T0 + timedelta(minutes=3)
    saved = replace(
        created,
        last_id="齐夏-0042",
        rows_done=42,
        rows_failed=1,
        status=Status.REFUSED,
        message="2 of 40 sampled documents differ",
        updated_at=later,
    )
    await w.store.save(saved)
    assert await w.store.unfinished(w.prefix + "a") == saved
    await w.store.save(replace(saved, status=Status.ABANDONED, finished_at=later))


async def contract_a_finished_rebuild_frees_the_alias(w: RebuildStateWorld) -> None:
    created = record(w, "a")
    await w.store.create(created)
    done = replace(created, status=Status.DONE, updated_at=T0, finished_at=T0 + timedelta(hours=1))
    await w.store.save(done)
    assert await w.store.unfinished(w.prefix + "a") is None
    again = record(w, "a")
    await w.store.create(again)
    assert await w.store.unfinished(w.prefix + "a") == again
    await w.store.save(replace(again, status=Status.ABANDONED, finished_at=T0))


REBUILD_STATE_CASES: list[Callable[[Any], Awaitable[None]]] = [
    contract_a_created_record_is_the_unfinished_one,
    contract_a_second_unfinished_rebuild_is_refused,
    contract_save_stores_progress,
    contract_a_finished_rebuild_frees_the_alias,
]
