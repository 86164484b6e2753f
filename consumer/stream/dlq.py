"""Dead letters: the record, its Avro encoding, the error budget, the producer, inspect and replay.

A dead letter keeps the original message bytes, key and position, so nothing is lost even when the
input could not be decoded at all (invariant 10), and `replay` can send it through the normal path
again. A message counts as finished for the offset ledger only once `DlqProducer.send` has resolved,
which happens when the broker acknowledged the write (invariant 5).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Protocol, cast

import confluent_kafka
import fastavro

from consumer.errors import ConfigError, DlqBudgetExceeded, ErrorCode, PoisonMessage, TransientError
from consumer.events import load_avro_schema
from consumer.types import Operation, ThinEvent

__all__ = [
    "DLQ_FORMAT",
    "DLQ_FORMAT_HEADER",
    "MAX_ERROR_MESSAGE",
    "REPLAYED_FROM_HEADER",
    "ConsumerPort",
    "DlqBudget",
    "DlqProducer",
    "DlqRecord",
    "ProducerPort",
    "ReplayReport",
    "decode_record",
    "encode",
    "inspect",
    "replay",
]

DLQ_FORMAT_HEADER: Final = "searchsync-dlq-format"
DLQ_FORMAT: Final = b"avro-v1"
REPLAYED_FROM_HEADER: Final = "searchsync-replayed-from"
MAX_ERROR_MESSAGE: Final = 4_096  # keeps a dead letter far below message.max.bytes

# The producer guarantees a DLQ write needs: every in-sync replica has it, no duplicates on retry.
_PRODUCER_GUARANTEES: Final[Mapping[str, str | bool]] = {"acks": "all", "enable.idempotence": True}

DeliveryCallback = Callable[[Any, Any], None]
"""``on_delivery(err, msg)``: `err` is a KafkaError or None once the broker answered."""


@dataclass(frozen=True, slots=True)
class DlqRecord:
    """One dead letter (``schemas/avro/dlq_record.avsc``).

    Event fields are None when the input was too broken to know them; `payload` and `original_key`
    are the original bytes. Timestamps must be timezone-aware (they are stored as UTC micros).
    """

    event_id: str | None
    aggregate_type: str | None
    aggregate_id: str | None
    source_revision: int | None
    operation: Operation | None
    first_failed_at: datetime
    last_failed_at: datetime
    attempts: int
    last_error_code: str
    last_error_message: str
    projection_schema_version: int | None
    original_topic: str
    original_partition: int
    original_offset: int
    original_key: bytes | None
    payload: bytes | None
    consumer_group: str

    def __post_init__(self) -> None:
        for stamp in (self.first_failed_at, self.last_failed_at):
            if stamp.tzinfo is None or stamp.utcoffset() is None:
                raise ValueError(f"DLQ timestamps must be timezone-aware, got {stamp!r}")

    @classmethod
    def for_message(
        cls,
        *,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        consumer_group: str,
        error_code: str,
        error_message: str,
        attempts: int,
        first_failed_at: datetime,
        last_failed_at: datetime,
        event: ThinEvent | None = None,
        projection_schema_version: int | None = None,
    ) -> DlqRecord:
        """Build a dead letter from a message, its decoded event if any, and its last error."""
        return cls(
            event_id=event.event_id if event else None,
            aggregate_type=event.aggregate_type if event else None,
            aggregate_id=event.aggregate_id if event else None,
            source_revision=event.source_revision if event else None,
            operation=event.operation if event else None,
            first_failed_at=first_failed_at,
            last_failed_at=last_failed_at,
            attempts=attempts,
            last_error_code=error_code,
            last_error_message=error_message[:MAX_ERROR_MESSAGE],
            projection_schema_version=projection_schema_version,
            original_topic=topic,
            original_partition=partition,
            original_offset=offset,
            original_key=key,
            payload=value,
            consumer_group=consumer_group,
        )


def encode(record: DlqRecord) -> bytes:
    """Schemaless Avro binary; the producer marks it with ``searchsync-dlq-format: avro-v1``."""
    buffer = io.BytesIO()
    fields = {name: getattr(record, name) for name in DlqRecord.__dataclass_fields__}
    fields["operation"] = record.operation.value if record.operation is not None else None
    fastavro.schemaless_writer(buffer, load_avro_schema("dlq_record"), fields)
    return buffer.getvalue()


def decode_record(value: bytes) -> DlqRecord:
    """The inverse of `encode`; raises PoisonMessage("BAD_DLQ_RECORD") on anything else."""
    buffer = io.BytesIO(value)
    try:
        fields = fastavro.schemaless_reader(buffer, load_avro_schema("dlq_record"), None)
        if not isinstance(fields, dict) or buffer.tell() != len(value):
            raise ValueError("trailing bytes or not a record")
        operation = fields.pop("operation")
        return DlqRecord(**fields, operation=Operation(operation) if operation else None)
    except Exception as exc:  # untrusted bytes: any failure means "not a dead letter of ours"
        raise PoisonMessage(
            ErrorCode.BAD_DLQ_RECORD, f"not an avro-v1 DLQ record: {exc!r:.200}"
        ) from exc


class DlqBudget:
    """Stops the consumer when dead-lettering stops being the exception.

    Trips when more than `max_consecutive` dead letters come in a row, or when, once `window`
    outcomes have been seen, the share of dead letters among the last `window` exceeds
    `max_ratio`. A tripped budget keeps raising on every further dead letter.
    """

    def __init__(self, max_ratio: float, window: int, max_consecutive: int) -> None:
        if not 0.0 < max_ratio <= 1.0:
            raise ValueError(f"max_ratio must be in (0, 1], got {max_ratio}")
        if window < 1 or max_consecutive < 1:
            raise ValueError("window and max_consecutive must be >= 1")
        self._max_ratio = max_ratio
        self._max_consecutive = max_consecutive
        self._outcomes: deque[bool] = deque(maxlen=window)  # True = dead letter
        self._dead_in_window = 0
        self._consecutive = 0

    @property
    def consecutive(self) -> int:
        return self._consecutive

    @property
    def dead_ratio(self) -> float:
        """Share of dead letters among the outcomes in the window (0.0 when empty)."""
        return self._dead_in_window / len(self._outcomes) if self._outcomes else 0.0

    def record_success(self) -> None:
        self._push(False)
        self._consecutive = 0

    def record_dead(self) -> None:
        """Count a dead letter; raise `DlqBudgetExceeded` if the budget is spent."""
        self._push(True)
        self._consecutive += 1
        if self._consecutive > self._max_consecutive:
            raise DlqBudgetExceeded(
                f"{self._consecutive} dead letters in a row (limit {self._max_consecutive}): "
                "stopping instead of dead-lettering everything"
            )
        window = self._outcomes.maxlen
        if len(self._outcomes) == window and self.dead_ratio > self._max_ratio:
            raise DlqBudgetExceeded(
                f"{self._dead_in_window} of the last {window} messages were dead-lettered "
                f"({self.dead_ratio:.1%} > {self._max_ratio:.1%}): stopping"
            )

    def _push(self, dead: bool) -> None:
        if len(self._outcomes) == self._outcomes.maxlen and self._outcomes[0]:
            self._dead_in_window -= 1
        self._outcomes.append(dead)
        self._dead_in_window += dead


class ProducerPort(Protocol):
    """The slice of ``confluent_kafka.Producer`` the DLQ uses (a fake implements it in tests)."""

    def produce(
        self,
        topic: str,
        value: bytes | None = ...,
        key: bytes | None = ...,
        *,
        partition: int = ...,
        headers: list[tuple[str, bytes]] | None = ...,
        on_delivery: DeliveryCallback | None = ...,
    ) -> None: ...

    def poll(self, timeout: float = ...) -> int: ...

    def flush(self, timeout: float = ...) -> int: ...


ProducerFactory = Callable[[dict[str, Any]], ProducerPort]


def _kafka_producer(config: dict[str, Any]) -> ProducerPort:
    return cast(ProducerPort, confluent_kafka.Producer(config))


class DlqProducer:
    """Writes dead letters to one topic; `send` resolves only when the broker acknowledged.

    librdkafka runs delivery callbacks on whichever thread calls ``poll``: a small daemon thread
    polls, and each callback hands its result to the event loop with ``call_soon_threadsafe``.
    ``acks=all`` and ``enable.idempotence=true`` are always set, whatever `config` says.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        topic: str,
        factory: ProducerFactory | None = None,
    ) -> None:
        self._topic = topic
        self._producer = (factory or _kafka_producer)({**config, **_PRODUCER_GUARANTEES})
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._closed = False

    @property
    def topic(self) -> str:
        return self._topic

    async def send(self, record: DlqRecord, key: bytes | None) -> None:
        """Produce `record` and wait for the broker's acknowledgement.

        Raises TransientError when the write cannot be queued or the broker reports a failure;
        the caller keeps the message unfinished and tries again.
        """
        if self._closed:
            raise RuntimeError("DlqProducer.send after close")
        loop = asyncio.get_running_loop()
        acknowledged: asyncio.Future[None] = loop.create_future()

        def on_delivery(err: Any, _msg: Any) -> None:  # runs on the poll thread
            # RuntimeError: the loop is gone, so nobody waits for this answer any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, acknowledged, err)

        try:
            self._producer.produce(
                self._topic,
                encode(record),
                key,
                headers=[(DLQ_FORMAT_HEADER, DLQ_FORMAT)],
                on_delivery=on_delivery,
            )
        except BufferError as exc:
            raise TransientError(
                ErrorCode.DLQ_QUEUE_FULL, f"producer queue is full: {exc}"
            ) from exc
        except confluent_kafka.KafkaException as exc:
            raise TransientError(ErrorCode.DLQ_PRODUCE_FAILED, str(exc)) from exc
        self._ensure_poller()
        await acknowledged

    async def close(self, flush_timeout: float) -> int:
        """Stop polling and flush; returns how many dead letters were still unacknowledged."""
        self._closed = True
        self._stop.set()
        if self._poller is not None:
            await asyncio.to_thread(self._poller.join)
        return await asyncio.to_thread(self._producer.flush, flush_timeout)

    def _ensure_poller(self) -> None:
        if self._poller is None:
            self._poller = threading.Thread(
                target=self._poll_until_stopped, name=f"dlq-poll-{self._topic}", daemon=True
            )
            self._poller.start()

    def _poll_until_stopped(self) -> None:
        while not self._stop.is_set():
            self._producer.poll(0.1)


def _settle(future: asyncio.Future[None], err: Any) -> None:
    if future.done():  # the sender was cancelled; the dead letter may still have landed
        return
    if err is None:
        future.set_result(None)
    else:
        future.set_exception(TransientError(ErrorCode.DLQ_DELIVERY_FAILED, str(err)))


# --- inspect and replay: blocking library functions for the CLI ----------------------------------


class ConsumerPort(Protocol):
    """The slice of ``confluent_kafka.Consumer`` that inspect and replay use."""

    def list_topics(self, topic: str, timeout: float) -> Any: ...
    def get_watermark_offsets(self, partition: Any, timeout: float) -> tuple[int, int]: ...
    def committed(self, partitions: list[Any], timeout: float) -> list[Any]: ...
    def assign(self, partitions: list[Any]) -> None: ...
    def poll(self, timeout: float) -> Any: ...
    def commit(self, *, offsets: list[Any], asynchronous: bool) -> Any: ...
    def close(self) -> None: ...


ConsumerFactory = Callable[[dict[str, Any]], ConsumerPort]


def _kafka_consumer(config: dict[str, Any]) -> ConsumerPort:
    return cast(ConsumerPort, confluent_kafka.Consumer(config))


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """What a replay did (or, with `dry_run`, would do)."""

    dry_run: bool
    scanned: int
    replayed: tuple[DlqRecord, ...]
    skipped: int  # read but not matching the filters


def inspect(
    bootstrap: str,
    topic: str,
    *,
    limit: int,
    from_beginning: bool,
    extra: Mapping[str, Any] | None = None,
    timeout_s: float = 30.0,
    consumer_factory: ConsumerFactory | None = None,
) -> list[DlqRecord]:
    """Read up to `limit` dead letters without committing anything.

    `from_beginning=True` gives the oldest ones; otherwise the newest ones (the tail of every
    partition, merged by timestamp). Reading stops at the end offsets seen at the start.
    """
    if limit < 1:
        return []
    make_consumer = consumer_factory or _kafka_consumer
    consumer = make_consumer(_consumer_config(bootstrap, f"{topic}.inspect", extra))
    try:
        ends = _partition_ends(consumer, topic, timeout_s)
        starts = {
            p: low if from_beginning else max(low, high - limit) for p, (low, high) in ends.items()
        }
        found: list[tuple[int, int, int, DlqRecord]] = []
        for message in _read_to_end(consumer, topic, starts, ends, timeout_s):
            record = _decode_message(message)
            found.append((message.timestamp()[1], message.partition(), message.offset(), record))
            if from_beginning and len(found) >= limit:
                break
    finally:
        consumer.close()
    if not from_beginning:
        found.sort(key=lambda item: item[:3])
        found = found[-limit:]
    return [item[3] for item in found]


def replay(
    bootstrap: str,
    dlq_topic: str,
    *,
    dry_run: bool,
    event_id: str | None = None,
    error_code: str | None = None,
    limit: int | None = None,
    extra: Mapping[str, Any] | None = None,
    timeout_s: float = 30.0,
    consumer_factory: ConsumerFactory | None = None,
    producer_factory: ProducerFactory | None = None,
) -> ReplayReport:
    """Re-produce dead letters' original payload and key to their original topic and partition.

    Reads the DLQ with the consumer group ``<dlq_topic>.replay`` from its committed offsets and
    commits a dead letter only after its re-produce was acknowledged, so an interrupted replay
    resumes where it stopped. Records skipped by a filter are not committed past (per partition),
    so a later unfiltered replay still sees them; replaying twice is harmless because the consumer
    writes with external versions. Do not run two replays of one DLQ at the same time.
    """
    group = f"{dlq_topic}.replay"
    consumer = (consumer_factory or _kafka_consumer)(_consumer_config(bootstrap, group, extra))
    producer = None
    if not dry_run:
        config = {**(extra or {}), "bootstrap.servers": bootstrap, **_PRODUCER_GUARANTEES}
        producer = (producer_factory or _kafka_producer)(config)
    replayed: list[DlqRecord] = []
    scanned = skipped = 0
    held: set[int] = set()  # partitions with a skipped record: commits stop there
    try:
        ends = _partition_ends(consumer, dlq_topic, timeout_s)
        starts = _committed_starts(consumer, dlq_topic, ends, timeout_s)
        for message in _read_to_end(consumer, dlq_topic, starts, ends, timeout_s):
            scanned += 1
            record = _decode_message(message)
            wanted = (event_id is None or record.event_id == event_id) and (
                error_code is None or record.last_error_code == error_code
            )
            if not wanted:
                skipped += 1
                held.add(message.partition())
                continue
            replayed.append(record)
            if producer is not None:
                _replay_one(consumer, producer, message, record, dlq_topic, held, timeout_s)
            if limit is not None and len(replayed) >= limit:
                break
    finally:
        consumer.close()
        if producer is not None:
            producer.flush(timeout_s)
    return ReplayReport(dry_run=dry_run, scanned=scanned, replayed=tuple(replayed), skipped=skipped)


def _replay_one(
    consumer: ConsumerPort,
    producer: ProducerPort,
    message: Any,
    record: DlqRecord,
    dlq_topic: str,
    held: set[int],
    timeout_s: float,
) -> None:
    """Re-produce one dead letter, then commit past it unless its partition is held."""
    origin = f"{dlq_topic}/{message.partition()}/{message.offset()}".encode()
    _produce_and_wait(producer, record, origin, timeout_s)
    if message.partition() not in held:
        position = confluent_kafka.TopicPartition(
            dlq_topic, message.partition(), message.offset() + 1
        )
        consumer.commit(offsets=[position], asynchronous=False)


def _consumer_config(bootstrap: str, group: str, extra: Mapping[str, Any] | None) -> dict[str, Any]:
    return {
        **(extra or {}),
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
    }


def _partition_ends(
    consumer: ConsumerPort, topic: str, timeout_s: float
) -> dict[int, tuple[int, int]]:
    """Low and high watermark of every partition, taken once: reading stops at these ends."""
    metadata = consumer.list_topics(topic, timeout=timeout_s)
    described = metadata.topics.get(topic)
    if described is None or described.error is not None:
        raise ConfigError("dlq topic", "an existing Kafka topic", topic)
    ends = {}
    for p in sorted(described.partitions):
        position = confluent_kafka.TopicPartition(topic, p)
        ends[p] = consumer.get_watermark_offsets(position, timeout=timeout_s)
    return ends


def _committed_starts(
    consumer: ConsumerPort, topic: str, ends: Mapping[int, tuple[int, int]], timeout_s: float
) -> dict[int, int]:
    wanted = [confluent_kafka.TopicPartition(topic, p) for p in ends]
    starts = {}
    for position in consumer.committed(wanted, timeout=timeout_s):
        low, high = ends[position.partition]
        starts[position.partition] = min(max(position.offset, low), high)  # negative = none yet
    return starts


def _read_to_end(
    consumer: ConsumerPort,
    topic: str,
    starts: Mapping[int, int],
    ends: Mapping[int, tuple[int, int]],
    timeout_s: float,
) -> Iterator[Any]:
    """Yield the messages between `starts` and the high watermarks in `ends`, then stop."""
    pending = {p: ends[p][1] for p, start in starts.items() if start < ends[p][1]}
    if not pending:
        return
    consumer.assign([confluent_kafka.TopicPartition(topic, p, starts[p]) for p in pending])
    loop_deadline = _Deadline(timeout_s)
    while pending:
        if loop_deadline.expired():
            unread = sorted(pending)
            raise TransientError(
                ErrorCode.DLQ_READ_TIMEOUT, f"{topic}: partitions {unread} not read to end"
            )
        message = consumer.poll(timeout=0.5)
        if message is None:
            continue
        error = message.error()
        if error is not None:
            if error.code() == confluent_kafka.KafkaError._PARTITION_EOF:
                pending.pop(message.partition(), None)
                continue
            raise TransientError(ErrorCode.DLQ_READ_FAILED, str(error))
        partition, offset = message.partition(), message.offset()
        if partition not in pending:
            continue
        if offset + 1 >= pending[partition]:
            del pending[partition]
        yield message


def _decode_message(message: Any) -> DlqRecord:
    headers = dict(message.headers() or [])
    marker = headers.get(DLQ_FORMAT_HEADER)
    where = f"{message.topic()}/{message.partition()}/{message.offset()}"
    if marker is not None and marker != DLQ_FORMAT:
        raise PoisonMessage(ErrorCode.BAD_DLQ_RECORD, f"{where}: unsupported DLQ format {marker!r}")
    try:
        return decode_record(message.value() or b"")
    except PoisonMessage as exc:
        raise PoisonMessage(ErrorCode.BAD_DLQ_RECORD, f"{where}: {exc.message}") from exc


def _produce_and_wait(
    producer: ProducerPort, record: DlqRecord, origin: bytes, timeout_s: float
) -> None:
    outcome: list[Any] = []
    producer.produce(
        record.original_topic,
        record.payload,
        record.original_key,
        partition=record.original_partition,
        headers=[(REPLAYED_FROM_HEADER, origin)],
        on_delivery=lambda err, _msg: outcome.append(err),
    )
    deadline = _Deadline(timeout_s)
    while not outcome and not deadline.expired():
        producer.poll(0.1)
    if not outcome:
        raise TransientError(ErrorCode.REPLAY_TIMEOUT, f"no acknowledgement for {origin.decode()}")
    if outcome[0] is not None:
        raise TransientError(ErrorCode.REPLAY_FAILED, f"{origin.decode()}: {outcome[0]}")


class _Deadline:
    """A point in monotonic time; the blocking CLI helpers give up there instead of hanging."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._at = clock() + seconds

    def expired(self) -> bool:
        return self._clock() >= self._at
