"""DLQ record encoding, error budget and the acknowledged producer, against fakes."""

from __future__ import annotations

import asyncio
import base64
import io
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import fastavro
import orjson
import pytest
from confluent_kafka import KafkaError
from hypothesis import given
from hypothesis import strategies as st
from searchsync.dlq.record import (
    AVRO_V1,
    DLQ_FORMAT,
    DLQ_FORMAT_HEADER,
    JSON_V1,
    DlqBudget,
    DlqProducer,
    DlqRecord,
    decode_record,
    encode,
)
from searchsync.errors import MAX_ERROR_MESSAGE, DlqBudgetExceeded, PoisonMessage, TransientError
from searchsync.events import load_avro_schema
from searchsync.types import Operation

from tests.fakes.kafka_clients import FakeProducer
from tests.unit.dlq_samples import DLQ_T0, dead_letter

T0 = DLQ_T0


# --- record ------------------------------------------------------------------------------------


def test_for_message_copies_event_fields_and_truncates_the_message() -> None:
    record = dead_letter()
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


def test_a_credential_in_the_error_message_never_reaches_the_dead_letter() -> None:
    record = DlqRecord.for_message(
        topic="t",
        partition=0,
        offset=0,
        key=None,
        value=None,
        consumer_group="g",
        error_code="ES_UNAVAILABLE",
        error_message="cannot reach https://elastic:Hunter2-dlq@es.internal:9200/_bulk",
        attempts=1,
        first_failed_at=T0,
        last_failed_at=T0,
    )
    assert "Hunter2-dlq" not in record.last_error_message
    assert "https://elastic:***@es.internal:9200/_bulk" in record.last_error_message


def test_naive_timestamps_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        dead_letter(first_failed_at=datetime(2026, 1, 1))


def test_poison_record_round_trips_with_nulls() -> None:
    record = dead_letter(
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
    record = dead_letter(first_failed_at=T0.astimezone(plus_two))
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
        decode_record(encode(dead_letter()) + b"\x00")


def _avro_v1(record: DlqRecord) -> bytes:
    """A dead letter as releases before json-v1 wrote it: schemaless Avro."""
    buffer = io.BytesIO()
    fields = {name: getattr(record, name) for name in DlqRecord.__dataclass_fields__}
    fields["operation"] = record.operation.value if record.operation is not None else None
    fastavro.schemaless_writer(buffer, load_avro_schema("dlq_record"), fields)
    return buffer.getvalue()


@given(_records)
def test_records_written_as_avro_v1_are_still_read(record: DlqRecord) -> None:
    old = _avro_v1(record)
    assert decode_record(old, AVRO_V1) == record
    assert decode_record(old, None) == record  # without a header: told apart by the first byte
    assert decode_record(encode(record), None) == record


def test_the_value_is_json_with_the_seed_fields_and_readable_bytes() -> None:
    record = dead_letter(original_key=b"page_1", payload=b"\xff\x00not json")
    value = orjson.loads(encode(record))
    seed_000 = {
        "event_id", "aggregate_id", "source_revision", "operation", "first_failed_at",
        "last_failed_at", "attempts", "last_error_code", "last_error_message",
        "projection_schema_version",
    }  # fmt: skip
    assert seed_000 | {"original_topic", "original_partition", "original_offset"} <= set(value)
    assert value["first_failed_at"].endswith("Z")
    assert (value["original_key"], value["original_key_encoding"]) == ("page_1", "utf-8")
    assert value["payload_encoding"] == "base64"
    assert base64.b64decode(value["payload"]) == b"\xff\x00not json"


@given(st.binary(max_size=200), st.sampled_from([JSON_V1, AVRO_V1, None, b"xml-v9"]))
def test_decoding_garbage_in_any_form_raises_only_poison(value: bytes, form: bytes | None) -> None:
    try:
        record = decode_record(value, form)
    except PoisonMessage as exc:
        assert exc.code == "BAD_DLQ_RECORD"
    else:
        assert isinstance(record, DlqRecord)


def test_a_json_record_with_a_wrongly_typed_field_is_poison() -> None:
    value = orjson.loads(encode(dead_letter()))
    value["attempts"] = "5"
    with pytest.raises(PoisonMessage):
        decode_record(orjson.dumps(value), JSON_V1)


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
    budget.record_dead()  # a count not reset by the success would trip here
    budget.record_dead()


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
    record = dead_letter()
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
    sending = asyncio.create_task(producer.send(dead_letter(), None))
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
        await producer.send(dead_letter(), None)
    assert caught.value.code == "DLQ_QUEUE_FULL"
    await producer.close(1.0)


async def test_concurrent_sends_resolve_independently() -> None:
    producer, (fake,) = _dlq_producer()
    first = asyncio.create_task(producer.send(dead_letter(original_offset=1), None))
    second = asyncio.create_task(producer.send(dead_letter(original_offset=2), None))
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
        await producer.send(dead_letter(), None)
