"""Source lineage (docs/design.md, invariant 14): a topic re-created since the group recorded its
id, or a committed offset above the log end, blocks the partition like a history gap; `offsets
reset --accept-gap` is the way out and records the new id. Over fakes: no broker is needed."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from runtime_fakes import Fakes, tables_of
from searchsync.cli import main
from searchsync.exit_codes import ExitCode
from searchsync.kafka.gaps import GapBoard, GapGuard
from searchsync.kafka.lineage import LineageCheck, LineageMismatch, mismatch
from searchsync.observability.metrics import Metrics
from searchsync.resources import KafkaClients
from test_intake import TOPIC, TP0, TP1, FakeConfluentConsumer

from tests.fakes.kafka_admin import FakeTopics
from tests.fakes.lineage import FakeTopicLineage

COOPERATIVE = {
    "group.id": "g",
    "partition.assignment.strategy": "cooperative-sticky",
    "auto.offset.reset": "error",
}


def _guard(store: FakeTopicLineage, ids: dict[str, str], board: GapBoard) -> GapGuard:
    check = LineageCheck(
        store,
        "g",
        lambda topics: {t: ids[t] for t in topics if t in ids},
        asyncio.get_running_loop(),
        timeout_s=5,
    )
    return GapGuard(board, COOPERATIVE, fresh_start="earliest", timeout_s=5, lineage=check)


async def test_a_topic_first_seen_is_adopted_and_read() -> None:
    store, consumer = FakeTopicLineage(), FakeConfluentConsumer(COOPERATIVE, [])
    consumer.committed_at = {TP0: 4}
    guard = _guard(store, {TOPIC: "A"}, GapBoard())
    assigned = await asyncio.to_thread(guard.admit, consumer, [TP0, TP1])
    assert assigned == [TP0, TP1] and guard.board.blocked() == []
    assert await store.recorded("g") == {TOPIC: "A"}


async def test_a_re_created_topic_blocks_every_partition_even_without_offsets() -> None:
    store, consumer = FakeTopicLineage(), FakeConfluentConsumer(COOPERATIVE, [])
    await store.adopt("g", {TOPIC: "A"})
    metrics = Metrics()
    guard = _guard(store, {TOPIC: "B"}, GapBoard(metrics))
    consumer.committed_at = {TP1: 3}  # Kafka dropped the offsets with the old topic, or not
    assigned = await asyncio.to_thread(guard.admit, consumer, [TP0, TP1])
    assert assigned == [] and consumer.local == [("assign", [])]
    assert guard.board.blocked() == [
        LineageMismatch(TOPIC, 0, None, 1_000, "A", "B"),
        LineageMismatch(TOPIC, 1, 3, 1_000, "A", "B"),
    ]
    reason = guard.board.reasons()[0]
    assert "source lineage mismatch" in reason and "re-created" in reason
    assert "--accept-gap" in reason
    assert await store.recorded("g") == {TOPIC: "A"}  # only an accepted reset replaces it
    text = metrics.render().decode()
    assert f'searchsync_partition_lineage_mismatch{{partition="0",topic="{TOPIC}"}} 1.0' in text
    assert f'searchsync_partition_blocked{{partition="1",topic="{TOPIC}"}} 1.0' in text
    assert "searchsync_partition_gap_records{" not in text  # what was lost is unknown
    guard.board.release([TP0, TP1])
    assert 'partition="0"' not in metrics.render().decode()


async def test_an_offset_above_the_log_end_blocks_the_partition() -> None:
    store, consumer = FakeTopicLineage(), FakeConfluentConsumer(COOPERATIVE, [])
    guard = _guard(store, {TOPIC: "A"}, GapBoard())
    consumer.committed_at = {TP0: 1_200, TP1: 1_000}  # the fake's log end is 1000
    assert await asyncio.to_thread(guard.admit, consumer, [TP0, TP1]) == [TP1]
    [blocked] = guard.board.blocked()
    assert blocked == LineageMismatch(TOPIC, 0, 1_200, 1_000, "A", "A")
    assert "committed offset 1200 is above the log end 1000" in blocked.describe()


async def test_an_unreadable_lineage_is_said_and_the_offsets_still_checked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    consumer = FakeConfluentConsumer(COOPERATIVE, [])

    def down(topics: object) -> dict[str, str]:
        raise ConnectionError("mysql down")

    check = LineageCheck(FakeTopicLineage(), "g", down, asyncio.get_running_loop(), timeout_s=5)
    guard = GapGuard(GapBoard(), COOPERATIVE, fresh_start="earliest", timeout_s=5, lineage=check)
    consumer.committed_at = {TP0: 1_500}
    assert await asyncio.to_thread(guard.admit, consumer, [TP0]) == []
    assert "topic lineage unreadable" in caplog.text
    assert [g.committed for g in guard.board.blocked()] == [1_500]


def test_an_out_of_range_position_above_the_log_end_blocks() -> None:
    consumer = FakeConfluentConsumer(COOPERATIVE, [])
    guard = GapGuard(GapBoard(), COOPERATIVE, fresh_start="earliest", timeout_s=5)

    class Event:
        def topic(self) -> str:
            return TOPIC

        def partition(self) -> int:
            return 0

        def offset(self) -> int:
            return 1_300

    guard.out_of_range(consumer, Event())
    assert guard.board.blocked() == [LineageMismatch(TOPIC, 0, 1_300, 1_000)]
    assert consumer.sought == []


def test_mismatch_is_none_for_the_same_lineage_and_offsets_within_the_log() -> None:
    assert mismatch(TOPIC, 0, 1_000, 1_000, "A", "A") is None
    assert mismatch(TOPIC, 0, None, 0, None, "A") is None
    assert mismatch(TOPIC, 0, 5, 9, "A", None) is None  # the topic is gone: nothing to read


@pytest.fixture
def recreated() -> tuple[FakeTopics, FakeTopicLineage]:
    kafka = FakeTopics()
    kafka.topic(TOPIC, [b""] * 3, [b""] * 2)
    kafka.ids[TOPIC] = "B"
    lineage = FakeTopicLineage()
    asyncio.run(lineage.adopt("searchsync", {TOPIC: "A"}))
    return kafka, lineage


def _reset(kafka: FakeTopics, lineage: FakeTopicLineage, *argv: str) -> int:
    runtime = Fakes(kafka=KafkaClients(admin=kafka.admin), tables=tables_of(lineage=lineage))
    return main(["offsets", "reset", "--to", "earliest", *argv], runtime=runtime)


def test_a_reset_over_a_re_created_topic_needs_accept_gap_and_records_the_new_id(
    recreated: tuple[FakeTopics, FakeTopicLineage], capsys: pytest.CaptureFixture[str]
) -> None:
    kafka, lineage = recreated
    assert _reset(kafka, lineage, "--execute") == ExitCode.FAILURE
    err = capsys.readouterr().err
    assert "source lineage mismatch" in err and "--accept-gap" in err
    assert kafka.altered == [] and lineage.accepted == []

    assert _reset(kafka, lineage, "--execute", "--partition", "0", "--accept-gap") != 0
    assert "drop --partition" in capsys.readouterr().err
    assert kafka.altered == []

    assert _reset(kafka, lineage, "--execute", "--accept-gap", "--json") == ExitCode.OK
    report = orjson.loads(capsys.readouterr().out)
    assert [
        (m["partition"], m["recorded_id"], m["current_id"]) for m in report["accepted_lineage"]
    ] == [
        (0, "A", "B"),
        (1, "A", "B"),
    ]
    assert kafka.committed_by("searchsync") == {(TOPIC, 0): 0, (TOPIC, 1): 0}
    [(group, topic, old, new, _by)] = lineage.accepted
    assert (group, topic, old, new) == ("searchsync", TOPIC, "A", "B")
    assert asyncio.run(lineage.recorded("searchsync")) == {TOPIC: "B"}

    assert _reset(kafka, lineage, "--execute") == ExitCode.OK  # nothing left to accept
    assert len(lineage.accepted) == 1


def test_status_names_a_re_created_topic_and_an_offset_above_the_log_end(
    recreated: tuple[FakeTopics, FakeTopicLineage],
) -> None:
    from searchsync.config import load_settings
    from searchsync.ops.status_probes import group_section

    kafka, _lineage = recreated
    kafka.commits[("searchsync", (TOPIC, 1))] = 9  # the log of partition 1 ends at 2
    settings = load_settings({"SEARCHSYNC_KAFKA_TOPICS": TOPIC})
    section = group_section(kafka.admin({}), settings, {TOPIC: "A"})
    assert [p.split(":")[0] for p in section.problems if "lineage" in p] == [
        f"{TOPIC}[0] blocked",
        f"{TOPIC}[1] blocked",
    ]
    assert "topic id A then, B now" in section.problems[1]
    assert [p["lineage_mismatch"] for p in section.data["partitions"]] == [True, True]

    kafka.ids[TOPIC] = "A"  # the same topic: only the offset above the end is a mismatch
    section = group_section(kafka.admin({}), settings, {TOPIC: "A"})
    [problem] = [p for p in section.problems if "lineage" in p]
    assert "committed offset 9 is above the log end 2" in problem


async def test_the_watch_says_a_topic_re_created_under_a_running_member() -> None:
    from searchsync.kafka.lineage import watch_lineage

    store, ids = FakeTopicLineage(), {TOPIC: "A"}
    check = LineageCheck(
        store, "g", lambda ts: {t: ids[t] for t in ts}, asyncio.get_running_loop(), timeout_s=5
    )
    stop = asyncio.Event()
    watching = asyncio.create_task(
        watch_lineage(check, lambda: [TOPIC], interval_s=0.01, stop=stop)
    )
    for _ in range(100):  # the first look adopts the topic as it is
        if await store.recorded("g"):
            break
        await asyncio.sleep(0.01)
    assert await store.recorded("g") == {TOPIC: "A"} and not watching.done()
    ids[TOPIC] = "B"
    why = await asyncio.wait_for(watching, 5)
    assert why == f"topic {TOPIC} was re-created while this member read it (topic id A then, B now)"

    stop.set()  # a member asked to stop: no finding
    assert await watch_lineage(check, lambda: [TOPIC], interval_s=60, stop=stop) is None
