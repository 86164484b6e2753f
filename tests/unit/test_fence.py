"""The schema fence alone (docs/design.md, "Schema fence"): what it reads, when, what it says."""

from __future__ import annotations

import logging

import pytest
from searchsync.errors import ErrorCode, TransientError
from searchsync.observability.metrics import Metrics
from searchsync.search.port import IndexInfo, WriteIndex
from searchsync.stream.fence import SchemaFence

from tests.fakes.search_index import InMemoryIndex

ALIAS = "s_wiki_page"
OWN = 2


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class CountingAdmin:
    """The in-memory admin, counting reads, that can be told to fail."""

    def __init__(self, index: InMemoryIndex) -> None:
        self._inner = index.admin
        self.reads = 0
        self.fail: Exception | None = None

    async def write_index(self, alias: str) -> WriteIndex | None:
        self.reads += 1
        if self.fail is not None:
            raise self.fail
        return await self._inner.write_index(alias)

    async def list_indices(self, alias: str) -> list[IndexInfo]:
        self.reads += 1
        if self.fail is not None:
            raise self.fail
        return await self._inner.list_indices(alias)


async def make(
    versions: dict[int, int | None], *, writes_to: int = 1
) -> tuple[InMemoryIndex, CountingAdmin, SchemaFence, Clock, Metrics]:
    index = InMemoryIndex()
    for n, version in versions.items():
        meta = {} if version is None else {"projection_schema_version": version}
        await index.admin.create_index(f"{ALIAS}_v{n}", {"mappings": {}}, meta=meta)
    index.given_alias(ALIAS, f"{ALIAS}_v{writes_to}")
    admin = CountingAdmin(index)
    clock = Clock()
    metrics = Metrics()
    fence = SchemaFence(admin, interval_s=5.0, clock=clock, observer=metrics)  # type: ignore[arg-type]
    return index, admin, fence, clock, metrics


def gauge(metrics: Metrics, name: str) -> float | None:
    return metrics.registry.get_sample_value(name, {"alias": ALIAS})


async def test_the_same_version_does_not_fence_and_reports_the_physical_index() -> None:
    _, _, fence, _, metrics = await make({1: OWN})
    state = await fence.check(ALIAS, OWN)
    assert state is not None and not state.fenced
    assert (state.index, state.index_version) == (f"{ALIAS}_v1", OWN)
    assert fence.reasons() == [] and not fence.holding()
    assert gauge(metrics, "searchsync_schema_fenced") == 0
    assert gauge(metrics, "alias_current_physical_index") == 1


async def test_another_version_fences_and_the_reason_names_the_alias_and_both_versions() -> None:
    _, _, fence, _, metrics = await make({1: OWN, 2: OWN + 1}, writes_to=2)
    state = await fence.check(ALIAS, OWN)
    assert state is not None and state.fenced
    assert fence.holding()
    [reason] = fence.reasons()
    assert ALIAS in reason and f"{ALIAS}_v2" in reason
    assert f"projection_schema_version {OWN + 1}" in reason and f"version {OWN}" in reason
    assert gauge(metrics, "searchsync_schema_fenced") == 1
    assert gauge(metrics, "alias_current_physical_index") == 2


async def test_an_index_without_the_version_does_not_fence() -> None:
    _, _, fence, _, _ = await make({1: None})
    state = await fence.check(ALIAS, OWN)
    assert state is not None and state.index_version is None and not state.fenced


async def test_a_missing_alias_does_not_fence_its_writes_fail_on_their_own() -> None:
    _, _, fence, _, _ = await make({1: OWN})
    state = await fence.check("s_other", OWN)
    assert state is not None and state.index is None and not state.fenced


async def test_the_answer_is_cached_until_the_interval_then_read_again() -> None:
    index, admin, fence, clock, _ = await make({1: OWN, 2: OWN + 1})
    await fence.check(ALIAS, OWN)
    reads = admin.reads
    await index.admin.swap_alias(ALIAS, old=f"{ALIAS}_v1", new=f"{ALIAS}_v2")
    clock.now += 4.9
    assert not fence.due()
    state = await fence.check(ALIAS, OWN)
    assert state is not None and not state.fenced and admin.reads == reads  # cached
    clock.now += 0.1
    assert fence.due()
    await fence.refresh_if_due()
    assert fence.fenced(ALIAS) is not None and admin.reads == reads + 1
    # a swap back lifts it at the next check
    await index.admin.swap_alias(ALIAS, old=f"{ALIAS}_v2", new=f"{ALIAS}_v1")
    clock.now += 5.0
    await fence.refresh_if_due()
    assert fence.fenced(ALIAS) is None and not fence.holding()


async def test_a_recheck_after_a_failed_write_reads_again_once() -> None:
    index, admin, fence, _, _ = await make({1: OWN, 2: OWN + 1})
    await fence.check(ALIAS, OWN)
    mark = fence.mark()
    await index.admin.swap_alias(ALIAS, old=f"{ALIAS}_v1", new=f"{ALIAS}_v2")
    reads = admin.reads
    state = await fence.recheck(ALIAS, since=mark)  # the clock has not moved: not due
    assert state is not None and state.fenced and admin.reads == reads + 1
    await fence.recheck(ALIAS, since=mark)  # a check after the mark answered already
    assert admin.reads == reads + 1


async def test_a_physical_target_reads_that_index_not_the_alias() -> None:
    _, _, fence, _, metrics = await make({1: OWN, 2: OWN + 1}, writes_to=1)
    state = await fence.check(f"{ALIAS}_v2", OWN + 1)
    assert state is not None and not state.fenced
    assert (state.index, state.index_version) == (f"{ALIAS}_v2", OWN + 1)
    assert gauge(metrics, "alias_current_physical_index") == 2
    old = await fence.check(f"{ALIAS}_v2", OWN)  # an older projector for that index: fenced
    assert old is not None and old.fenced


async def test_a_failed_check_keeps_the_last_answer_and_a_first_one_holds() -> None:
    _, admin, fence, clock, _ = await make({1: OWN, 2: OWN + 1}, writes_to=2)
    admin.fail = TransientError(ErrorCode.ES_UNAVAILABLE, "connection refused")
    assert await fence.check(ALIAS, OWN) is None
    assert fence.holding()
    [reason] = fence.reasons()
    assert "not checked yet" in reason and "connection refused" in reason
    admin.fail = None
    clock.now += 1  # never answered: due at once
    state = await fence.check(ALIAS, OWN)
    assert state is not None and state.fenced
    admin.fail = TransientError(ErrorCode.ES_UNAVAILABLE, "connection refused")
    clock.now += 10
    await fence.refresh_if_due()
    assert fence.fenced(ALIAS) is not None  # the last answer stands


async def test_one_warning_when_fenced_and_one_info_when_lifted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    index, _, fence, clock, _ = await make({1: OWN, 2: OWN + 1}, writes_to=2)
    caplog.set_level(logging.INFO, logger="searchsync.stream.fence")
    for _ in range(3):
        await fence.check(ALIAS, OWN)
        clock.now += 5
    await index.admin.swap_alias(ALIAS, old=f"{ALIAS}_v2", new=f"{ALIAS}_v1")
    for _ in range(3):
        await fence.refresh_if_due()
        clock.now += 5
    records = [r for r in caplog.records if r.name == "searchsync.stream.fence"]
    assert [r.levelno for r in records] == [logging.WARNING, logging.INFO]
    assert "schema fenced" in records[0].getMessage()
    assert "lifted" in records[1].getMessage()
