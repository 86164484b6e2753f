"""The `TopicLineage` (``search_topic_lineage``) and `LeaseStore` (``search_repair_lease``)
contracts: each case takes a world and runs unchanged against the fakes
(tests/unit/test_mysql_contracts.py) and the MySQL stores on MariaDB
(tests/integration/test_mysql_contracts_real.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from searchsync.mysql.lineage import TopicLineage
from searchsync.ops.repair.lease import LeaseStore

from tests.fakes.lineage import FakeTopicLineage
from tests.fakes.repair_lease import FakeLeaseStore


class LineageWorld(Protocol):
    lineage: TopicLineage
    prefix: str
    """Every group and topic a case uses starts with it."""


class LeaseWorld(Protocol):
    leases: LeaseStore
    prefix: str
    """Every aggregate type a case uses starts with it."""


class FakeLineageWorld:
    def __init__(self) -> None:
        self.lineage = FakeTopicLineage()
        self.prefix = "c-"


class FakeLeaseWorld:
    def __init__(self) -> None:
        self.leases = FakeLeaseStore()
        self.prefix = "c_"


async def a_topic_is_adopted_once_and_replaced_only_by_an_acceptance(w: LineageWorld) -> None:
    group, topic, other = f"{w.prefix}g", f"{w.prefix}t", f"{w.prefix}u"
    assert await w.lineage.recorded(group) == {}
    await w.lineage.adopt(group, {topic: "A"})
    await w.lineage.adopt(group, {topic: "B", other: "C"})  # recorded ones stay
    assert await w.lineage.recorded(group) == {topic: "A", other: "C"}
    await w.lineage.accept(group, {topic: "B"}, "ops@host")
    assert await w.lineage.recorded(group) == {topic: "B", other: "C"}
    assert await w.lineage.recorded(f"{w.prefix}nobody") == {}


async def groups_keep_their_own_lineage(w: LineageWorld) -> None:
    mine, theirs, topic = f"{w.prefix}mine", f"{w.prefix}theirs", f"{w.prefix}t"
    await w.lineage.adopt(mine, {topic: "A"})
    await w.lineage.accept(theirs, {topic: "Z"}, "ops@host")  # no record before: one now
    assert await w.lineage.recorded(mine) == {topic: "A"}
    assert await w.lineage.recorded(theirs) == {topic: "Z"}


async def a_live_lease_is_refused_to_another_and_renewed_by_its_holder(w: LeaseWorld) -> None:
    kind = f"{w.prefix}t"
    assert await w.leases.take(kind, "a", 600) is None
    assert await w.leases.take(kind, "a", 600) is None  # renewed
    held = await w.leases.take(kind, "b", 600)
    assert held is not None and (held.aggregate_type, held.holder) == (kind, "a")
    assert await w.leases.take(f"{w.prefix}other", "b", 600) is None  # types apart


async def a_released_lease_is_free_at_once_and_only_its_holder_releases(w: LeaseWorld) -> None:
    kind = f"{w.prefix}t"
    assert await w.leases.take(kind, "a", 600) is None
    await w.leases.release(kind, "b")  # not b's: nothing happens
    assert await w.leases.take(kind, "b", 600) is not None
    await w.leases.release(kind, "a")
    assert await w.leases.take(kind, "b", 600) is None


LINEAGE_CASES: list[Callable[[LineageWorld], Awaitable[None]]] = [
    a_topic_is_adopted_once_and_replaced_only_by_an_acceptance,
    groups_keep_their_own_lineage,
]
LEASE_CASES: list[Callable[[LeaseWorld], Awaitable[None]]] = [
    a_live_lease_is_refused_to_another_and_renewed_by_its_holder,
    a_released_lease_is_free_at_once_and_only_its_holder_releases,
]
