"""DLQ record encoding, error budget, acknowledged producer, and inspect/replay against fakes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition
from hypothesis import given
from hypothesis import strategies as st

from consumer.errors import ConfigError, DlqBudgetExceeded, PoisonMessage, TransientError
from consumer.stream.dlq import (
    DLQ_FORMAT,
    DLQ_FORMAT_HEADER,
    MAX_ERROR_MESSAGE,
    REPLAYED_FROM_HEADER,
    DlqBudget,
    DlqProducer,
    DlqRecord,
    decode_record,
    encode,
    inspect,
    replay,
)
from consumer.types import Operation, ThinEvent

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def _record(**changes: Any) -> DlqRecord:
    base = DlqRecord.for_message(
        topic="outbox.event.wiki_page",
        partition=1,
        offset=42,
        key=b"page-1",
        value=b'{"event_id": "e1"}',
        consumer_group="searchsync",
        error_code="ES_REJECTED",
        error_message="mapper_parsing_exception",
        attempts=3,
        first_failed_at=T0,
        last_failed_at=T0 + timedelta(seconds=30),
        event=ThinEvent("e1", "wiki_page", "page-1", Operation.UPSERT, 7),
        projection_schema_version=2,
    )
    return replace(base, **changes)


# --- record ------------------------------------------------------------------------------------


def test_for_message_copies_event_fields_and_truncates_the_message() -> None:
    record = _record()
    assert (record.event_id, record.aggregate_id, record.source_revision) == ("e1", "page-1", 7)
    assert record.operation is Operation.UPSERT
    long = DlqRecord.for_message(
        topic="t",
        partition=0,
        offset=0,
        key=None,
        value=None,
        consumer_group="g",
        error_code="EMPTY",
        error_message="x" * (MAX_ERROR_MESSAGE + 10),
        attempts=1,
        first_failed_at=T0,
        last_failed_at=T0,
    )
    assert len(long.last_error_message) == MAX_ERROR_MESSAGE
    assert long.event_id is long.operation is long.source_revision is None


def test_naive_timestamps_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        _record(first_failed_at=datetime(2026, 1, 1))


def test_poison_record_round_trips_with_nulls() -> None:
    record = _record(
        event_id=None,
        aggregate_type=None,
        aggregate_id=None,
        source_revision=None,
        operation=None,
        projection_schema_version=None,
        original_key=None,
        payload=b"\xff\x00not json",
    )
    assert decode_record(encode(record)) == record


def test_timestamps_in_another_zone_come_back_as_the_same_instant() -> None:
    plus_two = timezone(timedelta(hours=2))
    record = _record(first_failed_at=T0.astimezone(plus_two))
    assert decode_record(encode(record)).first_failed_at == T0


_opt_text = st.none() | st.text(max_size=30)
_stamps = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)
_records = st.builds(
    DlqRecord,
    event_id=_opt_text,
    aggregate_type=_opt_text,
    aggregate_id=_opt_text,
    source_revision=st.none() | st.integers(-(2**63), 2**63 - 1),
    operation=st.none() | st.sampled_from(list(Operation)),
    first_failed_at=_stamps,
    last_failed_at=_stamps,
    attempts=st.integers(0, 2**31 - 1),
    last_error_code=st.text(max_size=20),
    last_error_message=st.text(max_size=100),
    projection_schema_version=st.none() | st.integers(-(2**31), 2**31 - 1),
    original_topic=st.text(min_size=1, max_size=30),
    original_partition=st.integers(0, 2**31 - 1),
    original_offset=st.integers(0, 2**63 - 1),
    original_key=st.none() | st.binary(max_size=30),
    payload=st.none() | st.binary(max_size=200),
    consumer_group=st.text(min_size=1, max_size=30),
)


@given(_records)
def test_record_round_trip(record: DlqRecord) -> None:
    assert decode_record(encode(record)) == record


@given(st.binary(max_size=200))
def test_decode_record_of_garbage_raises_only_poison(value: bytes) -> None:
    try:
        record = decode_record(value)
    except PoisonMessage as exc:
        assert exc.code == "BAD_DLQ_RECORD"
    else:
        assert isinstance(record, DlqRecord)


def test_trailing_bytes_are_not_a_record() -> None:
    with pytest.raises(PoisonMessage):
        decode_record(encode(_record()) + b"\x00")


# --- budget ------------------------------------------------------------------------------------


def test_budget_trips_after_more_than_max_consecutive() -> None:
    budget = DlqBudget(max_ratio=1.0, window=100, max_consecutive=3)
    for _ in range(3):
        budget.record_dead()
    with pytest.raises(DlqBudgetExceeded, match="4 dead letters in a row"):
        budget.record_dead()


def test_success_resets_the_consecutive_count() -> None:
    budget = DlqBudget(max_ratio=1.0, window=100, max_consecutive=2)
    for _ in range(10):
        budget.record_dead()
        budget.record_dead()
        budget.record_success()
    assert budget.consecutive == 0


def test_ratio_is_only_judged_once_the_window_is_full() -> None:
    budget = DlqBudget(max_ratio=0.5, window=4, max_consecutive=100)
    budget.record_dead()
    budget.record_dead()
    budget.record_dead()  # 3 of 3: above 50 %, but the window is not full yet
    budget.record_success()  # the window is full now; a success is never judged
    with pytest.raises(DlqBudgetExceeded, match="3 of the last 4"):
        budget.record_dead()  # window [D, D, S, D] -> 75 %


@pytest.mark.parametrize(
    ("ratio", "window", "consecutive"), [(0.0, 10, 1), (1.5, 10, 1), (0.5, 0, 1), (0.5, 10, 0)]
)
def test_budget_rejects_nonsense_limits(ratio: float, window: int, consecutive: int) -> None:
    with pytest.raises(ValueError):
        DlqBudget(max_ratio=ratio, window=window, max_consecutive=consecutive)


@given(
    st.lists(st.booleans(), max_size=60),
    st.floats(0.05, 1.0),
    st.integers(1, 12),
    st.integers(1, 8),
)
def test_budget_matches_a_reference_model(
    outcomes: list[bool], ratio: float, window: int, consecutive: int
) -> None:
    budget = DlqBudget(max_ratio=ratio, window=window, max_consecutive=consecutive)
    history: list[bool] = []
    for dead in outcomes:
        history.append(dead)
        run = 0
        for item in reversed(history):
            if not item:
                break
            run += 1
        last = history[-window:]
        expected = dead and (
            run > consecutive or (len(last) == window and sum(last) / window > ratio)
        )
        if dead:
            if expected:
                with pytest.raises(DlqBudgetExceeded):
                    budget.record_dead()
            else:
                budget.record_dead()
        else:
            budget.record_success()


# --- producer ----------------------------------------------------------------------------------


@dataclass
class Produced:
    topic: str
    value: bytes | None
    key: bytes | None
    headers: list[tuple[str, bytes]] | None
    partition: int
    on_delivery: Callable[[Any, Any], None] | None


@dataclass
class FakeProducer:
    """Holds every delivery until the test releases it; poll() runs released callbacks."""

    config: dict[str, Any]
    produced: list[Produced] = field(default_factory=list)
    fail_produce: BaseException | None = None
    auto_ack: Any = None  # set to an error (or "ok") to deliver on the next poll without waiting
    polls: int = 0
    settled: int = 0
    _released: list[tuple[int, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _wake: threading.Event = field(default_factory=threading.Event)

    def produce(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        *,
        partition: int = -1,
        headers: list[tuple[str, bytes]] | None = None,
        on_delivery: Callable[[Any, Any], None] | None = None,
    ) -> None:
        if self.fail_produce is not None:
            raise self.fail_produce
        with self._lock:
            self.produced.append(Produced(topic, value, key, headers, partition, on_delivery))
            if self.auto_ack is not None:
                err = None if isinstance(self.auto_ack, str) else self.auto_ack
                self._released.append((len(self.produced) - 1, err))

    def release(self, index: int, err: Any = None) -> None:
        with self._lock:
            self._released.append((index, err))
        self._wake.set()

    def poll(self, timeout: float = -1) -> int:
        with self._lock:
            ready, self._released = self._released, []
            self.polls += 1
        for index, err in ready:
            callback = self.produced[index].on_delivery
            assert callback is not None
            callback(err, None)
            with self._lock:
                self.settled += 1
        if not ready:
            self._wake.wait(timeout)
            self._wake.clear()
        return len(ready)

    def flush(self, timeout: float = -1) -> int:
        self.poll(0)
        with self._lock:
            return len(self.produced) - self.settled


async def _until(condition: Callable[[], bool], what: str) -> None:
    """Wait for a condition with a deadline (never a fixed sleep that hopes)."""
    deadline = asyncio.get_running_loop().time() + 5.0
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


def _dlq_producer() -> tuple[DlqProducer, list[FakeProducer]]:
    made: list[FakeProducer] = []

    def factory(config: dict[str, Any]) -> FakeProducer:
        made.append(FakeProducer(config))
        return made[-1]

    producer = DlqProducer(
        {"bootstrap.servers": "x:1", "acks": "1", "enable.idempotence": False},
        topic="searchsync.dlq",
        factory=factory,
    )
    return producer, made


async def test_send_resolves_only_after_the_broker_acknowledged() -> None:
    producer, (fake,) = _dlq_producer()
    assert fake.config["acks"] == "all"
    assert fake.config["enable.idempotence"] is True
    record = _record()
    sending = asyncio.create_task(producer.send(record, b"page-1"))
    await _until(lambda: fake.produced and fake.polls >= 3, "produce and a few polls")
    assert not sending.done()  # produced and polled, but not acknowledged
    fake.release(0)
    await asyncio.wait_for(sending, 5)
    (sent,) = fake.produced
    assert (sent.topic, sent.key, sent.headers) == (
        "searchsync.dlq",
        b"page-1",
        [(DLQ_FORMAT_HEADER, DLQ_FORMAT)],
    )
    assert sent.value is not None and decode_record(sent.value) == record
    assert await producer.close(1.0) == 0  # nothing left unacknowledged


async def test_delivery_failure_raises_transient() -> None:
    producer, (fake,) = _dlq_producer()
    sending = asyncio.create_task(producer.send(_record(), None))
    await _until(lambda: bool(fake.produced), "produce")
    fake.release(0, KafkaError(KafkaError._MSG_TIMED_OUT))
    with pytest.raises(TransientError) as caught:
        await asyncio.wait_for(sending, 5)
    assert caught.value.code == "DLQ_DELIVERY_FAILED"
    await producer.close(1.0)


async def test_full_queue_raises_transient_without_waiting() -> None:
    producer, (fake,) = _dlq_producer()
    fake.fail_produce = BufferError("Local: Queue full")
    with pytest.raises(TransientError) as caught:
        await producer.send(_record(), None)
    assert caught.value.code == "DLQ_QUEUE_FULL"
    await producer.close(1.0)


async def test_concurrent_sends_resolve_independently() -> None:
    producer, (fake,) = _dlq_producer()
    first = asyncio.create_task(producer.send(_record(original_offset=1), None))
    second = asyncio.create_task(producer.send(_record(original_offset=2), None))
    await _until(lambda: len(fake.produced) == 2, "two produces")
    fake.release(1)
    await asyncio.wait_for(second, 5)
    assert not first.done()
    fake.release(0)
    await asyncio.wait_for(first, 5)
    await producer.close(1.0)


async def test_send_after_close_is_a_bug() -> None:
    producer, _ = _dlq_producer()
    await producer.close(1.0)
    with pytest.raises(RuntimeError):
        await producer.send(_record(), None)


# --- inspect and replay ------------------------------------------------------------------------

DLQ = "searchsync.dlq"
EOF_ERROR = SimpleNamespace(code=lambda: KafkaError._PARTITION_EOF)


@dataclass
class FakeMessage:
    _topic: str
    _partition: int
    _offset: int
    _value: bytes | None
    _headers: list[tuple[str, bytes]] | None = None
    _error: Any = None

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> list[tuple[str, bytes]] | None:
        return self._headers

    def error(self) -> Any:
        return self._error

    def timestamp(self) -> tuple[int, int]:
        return (1, self._offset * 10 + self._partition)


@dataclass
class FakeConsumer:
    """A DLQ topic held in memory; commits are remembered across consumers of one group."""

    log: dict[int, list[bytes]]
    commits: dict[int, int]
    config: dict[str, Any] = field(default_factory=dict)
    queue: list[FakeMessage] = field(default_factory=list)
    closed: bool = False

    def list_topics(self, topic: str, timeout: float) -> Any:
        known = {DLQ: SimpleNamespace(partitions=dict.fromkeys(self.log), error=None)}
        return SimpleNamespace(topics=known)

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float) -> tuple[int, int]:
        return 0, len(self.log[partition.partition])

    def committed(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        return [
            TopicPartition(p.topic, p.partition, self.commits.get(p.partition, -1001))
            for p in partitions
        ]

    def assign(self, partitions: list[TopicPartition]) -> None:
        streams = []
        for tp in partitions:
            values = self.log[tp.partition]
            stream = [
                FakeMessage(DLQ, tp.partition, o, values[o], [(DLQ_FORMAT_HEADER, DLQ_FORMAT)])
                for o in range(tp.offset, len(values))
            ]
            streams.append([*stream, FakeMessage(DLQ, tp.partition, -1, None, None, EOF_ERROR)])
        while any(streams):  # interleave partitions like a real consumer might
            for stream in streams:
                if stream:
                    self.queue.append(stream.pop(0))

    def poll(self, timeout: float) -> FakeMessage | None:
        return self.queue.pop(0) if self.queue else None

    def commit(self, *, offsets: list[TopicPartition], asynchronous: bool) -> None:
        assert asynchronous is False
        for tp in offsets:
            assert tp.topic == DLQ
            self.commits[tp.partition] = tp.offset

    def close(self) -> None:
        self.closed = True


@dataclass
class Dlq:
    """One DLQ topic plus the factories inspect/replay need."""

    log: dict[int, list[bytes]]
    commits: dict[int, int] = field(default_factory=dict)
    consumers: list[FakeConsumer] = field(default_factory=list)
    producers: list[FakeProducer] = field(default_factory=list)
    delivery_error: Any = None

    def consumer(self, config: dict[str, Any]) -> FakeConsumer:
        self.consumers.append(FakeConsumer(self.log, self.commits, config))
        return self.consumers[-1]

    def producer(self, config: dict[str, Any]) -> FakeProducer:
        fake = FakeProducer(config, auto_ack=self.delivery_error or "ok")
        self.producers.append(fake)
        return fake

    def replay(self, **kwargs: Any) -> Any:
        return replay(
            "x:1",
            DLQ,
            consumer_factory=self.consumer,
            producer_factory=self.producer,
            timeout_s=5.0,
            **{"dry_run": False, **kwargs},
        )


def _dlq(*partitions: list[DlqRecord]) -> Dlq:
    return Dlq({p: [encode(r) for r in records] for p, records in enumerate(partitions)})


def _numbered(n: int, partition: int, code: str = "ES_REJECTED") -> list[DlqRecord]:
    return [
        _record(
            event_id=f"p{partition}-{i}",
            original_offset=100 * partition + i,
            original_partition=partition + 3,
            last_error_code=code,
            payload=f"payload {partition}/{i}".encode(),
        )
        for i in range(n)
    ]


def test_replay_reproduces_payload_key_and_partition_then_commits() -> None:
    dlq = _dlq(_numbered(2, 0), _numbered(1, 1))
    report = dlq.replay()
    assert report.scanned == 3 and report.skipped == 0 and not report.dry_run
    (producer,) = dlq.producers
    assert producer.config["acks"] == "all" and producer.config["enable.idempotence"] is True
    sent = {(p.topic, p.partition, p.key, p.value) for p in producer.produced}
    assert sent == {
        ("outbox.event.wiki_page", 3, b"page-1", b"payload 0/0"),
        ("outbox.event.wiki_page", 3, b"page-1", b"payload 0/1"),
        ("outbox.event.wiki_page", 4, b"page-1", b"payload 1/0"),
    }
    origins = sorted(dict(p.headers or [])[REPLAYED_FROM_HEADER] for p in producer.produced)
    assert origins == [b"searchsync.dlq/0/0", b"searchsync.dlq/0/1", b"searchsync.dlq/1/0"]
    assert dlq.commits == {0: 2, 1: 1}
    assert dlq.consumers[0].config["group.id"] == "searchsync.dlq.replay"
    assert dlq.consumers[0].config["enable.auto.commit"] is False
    assert dlq.consumers[0].closed


def test_replay_resumes_from_its_commits() -> None:
    dlq = _dlq(_numbered(3, 0))
    assert len(dlq.replay(limit=2).replayed) == 2
    assert dlq.commits == {0: 2}
    second = dlq.replay()
    assert [r.event_id for r in second.replayed] == ["p0-2"]
    assert dlq.replay().scanned == 0


def test_dry_run_neither_produces_nor_commits() -> None:
    dlq = _dlq(_numbered(2, 0))
    report = dlq.replay(dry_run=True)
    assert report.dry_run and [r.event_id for r in report.replayed] == ["p0-0", "p0-1"]
    assert dlq.producers == [] and dlq.commits == {}


def test_filtered_replay_does_not_commit_past_a_skipped_record() -> None:
    records = _numbered(3, 0)
    records[1] = replace(records[1], last_error_code="TRUTH_LAGGING")
    dlq = _dlq(records, _numbered(1, 1))
    report = dlq.replay(error_code="ES_REJECTED")
    assert [r.event_id for r in report.replayed] == ["p0-0", "p1-0", "p0-2"]
    assert report.skipped == 1
    assert dlq.commits == {0: 1, 1: 1}  # p0-2 was replayed but p0-1 is still owed a replay
    by_event = dlq.replay(dry_run=True, event_id="p0-1")
    assert [r.event_id for r in by_event.replayed] == ["p0-1"]


def test_failed_re_produce_stops_without_committing_that_record() -> None:
    dlq = _dlq(_numbered(2, 0))
    dlq.delivery_error = KafkaError(KafkaError._MSG_TIMED_OUT)
    with pytest.raises(TransientError) as caught:
        dlq.replay()
    assert caught.value.code == "REPLAY_FAILED"
    assert dlq.commits == {}


def test_replay_refuses_a_foreign_record_instead_of_skipping_it() -> None:
    dlq = Dlq({0: [b"\x01\x02 not avro"]})
    with pytest.raises(PoisonMessage) as caught:
        dlq.replay()
    assert caught.value.code == "BAD_DLQ_RECORD"
    assert "searchsync.dlq/0/0" in caught.value.message
    assert dlq.commits == {}


def test_inspect_oldest_and_newest() -> None:
    dlq = _dlq(_numbered(3, 0), _numbered(3, 1))
    oldest = inspect("x:1", DLQ, limit=2, from_beginning=True, consumer_factory=dlq.consumer)
    assert [r.event_id for r in oldest] == ["p0-0", "p1-0"]
    newest = inspect("x:1", DLQ, limit=2, from_beginning=False, consumer_factory=dlq.consumer)
    assert [r.event_id for r in newest] == ["p0-2", "p1-2"]  # by timestamp, newest last
    everything = inspect("x:1", DLQ, limit=100, from_beginning=True, consumer_factory=dlq.consumer)
    assert len(everything) == 6
    assert dlq.commits == {}
    assert all(c.closed for c in dlq.consumers)


def test_inspect_of_an_unknown_topic_is_a_config_error() -> None:
    dlq = _dlq(_numbered(1, 0))
    with pytest.raises(ConfigError):
        inspect("x:1", "nope.dlq", limit=1, from_beginning=True, consumer_factory=dlq.consumer)
