"""The thread-to-loop rebalance bridge of `KafkaIntake`, over a fake confluent consumer.

librdkafka runs rebalance callbacks on the consumer's thread, inside ``consume()``. The intake hops
to the event loop: on a revoke the pipeline drains the revoked partitions (`revoking`), and the
offsets it returns are committed on the consumer's thread *before* the callback returns (so before
the partitions go to another member); on a loss nothing is committed. No broker is needed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from confluent_kafka import TopicPartition as KafkaTopicPartition
from pipeline_fakes import wait_until
from searchsync.kafka.intake import KafkaIntake
from searchsync.types import TopicPartition

TOPIC = "outbox.event.wiki_page"
TP0: TopicPartition = (TOPIC, 0)
TP1: TopicPartition = (TOPIC, 1)


class FakeConfluentConsumer:
    """Runs the rebalance steps it is given inside the next `consume`, as librdkafka does."""

    def __init__(self, config: dict[str, Any], log: list[str]) -> None:
        self.config = config
        self.log = log
        self.steps: list[Callable[[], None]] = []
        self.commits: list[tuple[str, dict[TopicPartition, int]]] = []
        self.reject: set[TopicPartition] = set()
        self.callbacks: dict[str, Any] = {}
        self.assignment: list[TopicPartition] = []
        self.resumed: list[TopicPartition] = []
        self.committed_at: dict[TopicPartition, int] = {}  # the group's offsets (absent: none)
        self.log_start: dict[TopicPartition, int] = {}
        self.local: list[tuple[str, list[tuple[TopicPartition, int]]]] = []
        self.sought: list[tuple[TopicPartition, int]] = []

    def committed(self, tps: list[KafkaTopicPartition], timeout: float) -> list[Any]:
        return [
            KafkaTopicPartition(tp.topic, tp.partition, self.committed_at.get(_tp(tp), -1001))
            for tp in tps
        ]

    def get_watermark_offsets(
        self, tp: KafkaTopicPartition, timeout: float, cached: bool = False
    ) -> tuple[int, int]:
        return self.log_start.get(_tp(tp), 0), 1_000

    def incremental_assign(self, tps: list[KafkaTopicPartition]) -> None:
        self.local.append(("assign", [(_tp(tp), tp.offset) for tp in tps]))

    def incremental_unassign(self, tps: list[KafkaTopicPartition]) -> None:
        self.local.append(("unassign", [(_tp(tp), tp.offset) for tp in tps]))

    def seek(self, tp: KafkaTopicPartition) -> None:
        self.sought.append((_tp(tp), tp.offset))

    def resume(self, partitions: list[KafkaTopicPartition]) -> None:
        self.resumed += [(tp.topic, tp.partition) for tp in partitions]

    def subscribe(self, topics: list[str], **callbacks: Any) -> None:
        self.callbacks = callbacks

    def _fire(self, name: str, tps: Sequence[TopicPartition]) -> None:
        self.callbacks[name](self, [KafkaTopicPartition(t, p) for t, p in tps])

    def assign(self, tps: Sequence[TopicPartition]) -> None:
        self.steps.append(lambda: self._fire("on_assign", tps))
        self.assignment += list(tps)

    def revoke(self, tps: Sequence[TopicPartition]) -> None:
        self.steps.append(lambda: self._fire("on_revoke", tps))

    def lose(self, tps: Sequence[TopicPartition]) -> None:
        self.steps.append(lambda: self._fire("on_lost", tps))

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        while self.steps:
            self.steps.pop(0)()
        return []

    def commit(self, *, offsets: list[TopicPartition], asynchronous: bool) -> list[Any]:
        assert asynchronous is False
        committed = {(tp.topic, tp.partition): tp.offset for tp in offsets}
        self.commits.append((threading.current_thread().name, committed))
        self.log.append(f"commit {sorted(committed.items())}")
        return [
            KafkaTopicPartition(tp.topic, tp.partition, tp.offset)
            if (tp.topic, tp.partition) not in self.reject
            else _failed(tp)
            for tp in offsets
        ]

    def close(self) -> None:
        if self.assignment:
            self._fire("on_revoke", self.assignment)


def _tp(tp: KafkaTopicPartition) -> TopicPartition:
    return (tp.topic, tp.partition)


def _failed(tp: TopicPartition) -> Any:
    class Failed:
        topic, partition, offset = tp.topic, tp.partition, tp.offset
        error = "REBALANCE_IN_PROGRESS"

    return Failed()


class Listener:
    """A pipeline stand-in: records the order of calls and the thread each ran on."""

    def __init__(self, log: list[str], offsets: dict[TopicPartition, int]) -> None:
        self.log = log
        self.offsets = offsets
        self.threads: set[str] = set()
        self.drain = asyncio.Event()
        self.drain.set()
        self.fail: BaseException | None = None

    def assigned(self, partitions: Sequence[TopicPartition]) -> None:
        self.threads.add(threading.current_thread().name)
        self.log.append(f"assigned {sorted(partitions)}")

    async def revoking(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        self.threads.add(threading.current_thread().name)
        self.log.append(f"revoking {sorted(partitions)}")
        await self.drain.wait()  # the in-flight work of the revoked partitions finishing
        if self.fail is not None:
            raise self.fail
        self.log.append("drained")
        return {tp: o for tp, o in self.offsets.items() if tp in partitions}

    def revoked(self, partitions: Sequence[TopicPartition], *, lost: bool) -> None:
        self.threads.add(threading.current_thread().name)
        self.log.append(f"revoked {sorted(partitions)} lost={lost}")


async def _intake(
    offsets: dict[TopicPartition, int],
    *,
    revoke_timeout_s: float = 5.0,
    config: dict[str, Any] | None = None,
) -> tuple[KafkaIntake, FakeConfluentConsumer, Listener, list[str]]:
    log: list[str] = []
    made: list[FakeConfluentConsumer] = []
    listener = Listener(log, offsets)

    def factory(config: dict[str, Any]) -> FakeConfluentConsumer:
        made.append(FakeConfluentConsumer(config, log))
        return made[0]

    intake = KafkaIntake(
        config or {"group.id": "g"},
        [TOPIC],
        listener,
        revoke_timeout_s=revoke_timeout_s,
        consumer_factory=factory,
    )
    await intake.start()
    return intake, made[0], listener, log


async def test_a_revoke_drains_on_the_loop_and_commits_before_the_callback_returns() -> None:
    intake, consumer, listener, log = await _intake({TP0: 7, TP1: 3})
    consumer.assign([TP0, TP1])
    await intake.consume(10, 0.0)
    consumer.revoke([TP0])
    listener.drain.clear()
    consuming = asyncio.create_task(intake.consume(10, 0.0))
    # the loop stays free while the consumer thread waits for the drain
    await wait_until(lambda: f"revoking {[TP0]}" in log, "the drain started on the loop")
    assert consumer.commits == []  # nothing committed while the work is still draining
    assert not consuming.done()
    listener.drain.set()
    await asyncio.wait_for(consuming, 5)
    assert log == [
        f"assigned {[TP0, TP1]}",
        f"revoking {[TP0]}",
        "drained",
        f"commit {[(TP0, 7)]}",
        f"revoked {[TP0]} lost=False",
    ]
    [(thread, committed)] = consumer.commits
    assert committed == {TP0: 7}  # only the revoked partition's finished prefix
    assert thread.startswith("searchsync-kafka")  # the consumer's own thread
    assert listener.threads == {threading.current_thread().name}  # the loop's thread
    await intake.close()


async def test_revoked_and_lost_partitions_leave_resumed() -> None:
    """librdkafka keeps a pause across a revoke: a partition paused by backpressure and later
    assigned back to the same member must not stay paused (tests/faults seed 21)."""
    intake, consumer, _listener, _log = await _intake({TP0: 7, TP1: 3})
    consumer.assign([TP0, TP1])
    await intake.consume(10, 0.0)
    assert consumer.resumed == []
    consumer.revoke([TP0])
    consumer.lose([TP1])
    await intake.consume(10, 0.0)
    assert consumer.resumed == [TP0, TP1]
    consumer.assignment = []
    await intake.close()


async def test_a_lost_partition_commits_nothing() -> None:
    intake, consumer, _listener, log = await _intake({TP0: 7})
    consumer.assign([TP0])
    consumer.lose([TP0])
    await intake.consume(10, 0.0)
    assert log == [f"assigned {[TP0]}", f"revoked {[TP0]} lost=True"]
    assert consumer.commits == []
    consumer.assignment = []
    await intake.close()


async def test_a_failed_drain_commits_nothing_but_still_lets_the_partition_go() -> None:
    intake, consumer, listener, log = await _intake({TP0: 7})
    listener.fail = RuntimeError("drain broke")
    consumer.assign([TP0])
    consumer.revoke([TP0])
    await intake.consume(10, 0.0)
    assert consumer.commits == []
    assert log[-1] == f"revoked {[TP0]} lost=False"
    consumer.assignment = []
    await intake.close()


async def test_a_drain_past_the_revoke_timeout_commits_nothing() -> None:
    intake, consumer, listener, log = await _intake({TP0: 7}, revoke_timeout_s=0.05)
    listener.drain.clear()  # never finishes
    consumer.assign([TP0])
    consumer.revoke([TP0])
    await intake.consume(10, 0.0)
    assert consumer.commits == []
    assert log[-1] == f"revoked {[TP0]} lost=False"
    consumer.assignment = []
    await intake.close()


async def test_close_revokes_and_commits_the_finished_prefix() -> None:
    intake, consumer, _listener, log = await _intake({TP0: 4, TP1: 2})
    consumer.assign([TP0, TP1])
    await intake.consume(10, 0.0)
    await intake.close()
    assert consumer.commits[-1][1] == {TP0: 4, TP1: 2}
    assert log[-1] == f"revoked {[TP0, TP1]} lost=False"


@pytest.mark.parametrize("rejected", [set(), {TP1}])
async def test_commit_reports_each_partition(rejected: set[TopicPartition]) -> None:
    intake, consumer, _listener, _log = await _intake({})
    consumer.reject = rejected
    result = await intake.commit({TP0: 1, TP1: 2})
    assert result == {TP0: True, TP1: TP1 not in rejected}
    await intake.close()
