"""Dead letters: the record, its encoding, the error budget and the pipeline's producer. A dead
letter keeps the original's bytes, key and position, so a replay can resend it (docs/design.md,
invariants 5 and 10). On the wire: one JSON object, key and value as UTF-8 text or base64
(``*_encoding``); header ``searchsync-dlq-format``: ``json-v1`` written, ``avro-v1`` still read."""

from __future__ import annotations

import base64
import io
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import confluent_kafka
import fastavro
import fastavro.validation
import orjson

from searchsync.config import scrub_credentials
from searchsync.errors import (
    MAX_ERROR_MESSAGE,
    DeliveryFailed,
    DlqBudgetExceeded,
    ErrorCode,
    PoisonMessage,
    TransientError,
)
from searchsync.events import load_avro_schema
from searchsync.kafka.producer import AcknowledgedProducer, ProducerFactory
from searchsync.types import Operation, ThinEvent

DLQ_FORMAT_HEADER: Final = "searchsync-dlq-format"
JSON_V1: Final = b"json-v1"
AVRO_V1: Final = b"avro-v1"
DLQ_FORMAT: Final = JSON_V1  # the form `encode` writes
REPLAYED_FROM_HEADER: Final = "searchsync-replayed-from"


@dataclass(frozen=True, slots=True)
class DlqRecord:
    """One dead letter (``schemas/avro/dlq_record.avsc``). Event fields are None when the input
    was too broken to know them; timestamps must be timezone-aware (stored as UTC micros)."""

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
        known = ("event_id", "aggregate_type", "aggregate_id", "source_revision", "operation")
        return cls(
            **{name: getattr(event, name) if event else None for name in known},
            first_failed_at=first_failed_at,
            last_failed_at=last_failed_at,
            attempts=attempts,
            last_error_code=error_code,
            last_error_message=scrub_credentials(error_message)[:MAX_ERROR_MESSAGE],
            projection_schema_version=projection_schema_version,
            original_topic=topic,
            original_partition=partition,
            original_offset=offset,
            original_key=key,
            payload=value,
            consumer_group=consumer_group,
        )


_FIELDS: Final = tuple(DlqRecord.__dataclass_fields__)
_BYTES: Final = ("original_key", "payload")
_STAMPS: Final = ("first_failed_at", "last_failed_at")


def encode(record: DlqRecord) -> bytes:
    """The ``json-v1`` value of `record`."""
    fields: dict[str, Any] = {name: getattr(record, name) for name in _FIELDS}
    fields["operation"] = record.operation.value if record.operation is not None else None
    for name in _STAMPS:
        stamp: datetime = fields[name]
        fields[name] = stamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    for name in _BYTES:
        fields[name], fields[f"{name}_encoding"] = _text(fields[name])
    return orjson.dumps(fields)


def decode_record(value: bytes, form: bytes | None = DLQ_FORMAT) -> DlqRecord:
    """The record in `value`, written in `form` (the header's value; None when there is none, and
    then the first byte tells JSON from Avro). Raises PoisonMessage(BAD_DLQ_RECORD) otherwise."""
    if form is None:  # no header: a JSON object starts with "{", an Avro record never does
        form = JSON_V1 if value[:1] == b"{" else AVRO_V1
    read = {JSON_V1: _from_json, AVRO_V1: _from_avro}.get(form)
    if read is None:
        raise PoisonMessage(ErrorCode.BAD_DLQ_RECORD, f"unsupported DLQ format {form!r}")
    try:
        fields = read(value)
        operation = fields.pop("operation")
        return DlqRecord(**fields, operation=Operation(operation) if operation else None)
    except Exception as exc:  # untrusted bytes: any failure means "not a dead letter of ours"
        why = f"not a {form.decode('ascii', 'replace')} DLQ record: {exc!r:.200}"
        raise PoisonMessage(ErrorCode.BAD_DLQ_RECORD, why) from exc


def _text(raw: bytes | None) -> tuple[str | None, str | None]:
    if raw is None:
        return None, None
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(raw).decode("ascii"), "base64"


def _raw(text: object, encoding: object) -> bytes | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError(f"expected a string, got {type(text).__name__}")
    if encoding == "utf-8":
        return text.encode("utf-8")
    if encoding == "base64":
        return base64.b64decode(text, validate=True)
    raise ValueError(f"unknown encoding {encoding!r}")


def _from_json(value: bytes) -> dict[str, Any]:
    fields = orjson.loads(value)
    if not isinstance(fields, dict):
        raise ValueError("not a JSON object")
    for name in _BYTES:
        fields[name] = _raw(fields.get(name), fields.pop(f"{name}_encoding", None))
    for name in _STAMPS:
        fields[name] = datetime.fromisoformat(fields[name])
    # the Avro schema holds the same fields: it checks every type in one call
    fastavro.validation.validate(fields, load_avro_schema("dlq_record"), raise_errors=True)
    return fields


def _from_avro(value: bytes) -> dict[str, Any]:
    buffer = io.BytesIO(value)
    fields = fastavro.schemaless_reader(buffer, load_avro_schema("dlq_record"), None)
    if not isinstance(fields, dict) or buffer.tell() != len(value):
        raise ValueError("trailing bytes or not a record")
    return fields


class DlqBudget:
    """Stops the consumer when dead-lettering stops being the exception: trips when more than
    `max_consecutive` dead letters come in a row, or when the share of dead letters among the
    last `window` outcomes (once there are that many) exceeds `max_ratio`; then keeps raising on
    every further dead letter."""

    def __init__(self, max_ratio: float, window: int, max_consecutive: int) -> None:
        if not 0.0 < max_ratio <= 1.0:
            raise ValueError(f"max_ratio must be in (0, 1], got {max_ratio}")
        if window < 1 or max_consecutive < 1:
            raise ValueError("window and max_consecutive must be >= 1")
        self._max_ratio = max_ratio
        self._max_consecutive = max_consecutive
        self._outcomes: deque[bool] = deque(maxlen=window)  # True = dead letter
        self._consecutive = 0

    def record_success(self) -> None:
        self._outcomes.append(False)
        self._consecutive = 0

    def record_dead(self) -> None:
        """Count a dead letter; raise `DlqBudgetExceeded` if the budget is spent."""
        self._outcomes.append(True)
        self._consecutive += 1
        if self._consecutive > self._max_consecutive:
            raise DlqBudgetExceeded(
                f"{self._consecutive} dead letters in a row (limit {self._max_consecutive}): "
                "stopping instead of dead-lettering everything"
            )
        window, dead = self._outcomes.maxlen, sum(self._outcomes)
        if len(self._outcomes) == window and dead / window > self._max_ratio:
            raise DlqBudgetExceeded(
                f"{dead} of the last {window} messages were dead-lettered "
                f"({dead / window:.1%} > {self._max_ratio:.1%}): stopping"
            )


class DlqProducer:
    """Writes dead letters to one topic; `send` resolves only when the broker acknowledged
    (``acks=all``, idempotent) and raises `TransientError` for every failure to write."""

    def __init__(
        self, config: Mapping[str, Any], *, topic: str, factory: ProducerFactory | None = None
    ) -> None:
        self._topic = topic
        self._producer = AcknowledgedProducer(config, name=f"dlq-{topic}", factory=factory)

    async def send(self, record: DlqRecord, key: bytes | None) -> None:
        try:
            await self._producer.send(
                self._topic, encode(record), key, headers=[(DLQ_FORMAT_HEADER, DLQ_FORMAT)]
            )
        except BufferError as exc:
            raise TransientError(
                ErrorCode.DLQ_QUEUE_FULL, f"producer queue is full: {exc}"
            ) from exc
        except confluent_kafka.KafkaException as exc:
            raise TransientError(ErrorCode.DLQ_PRODUCE_FAILED, str(exc)) from exc
        except DeliveryFailed as exc:
            raise TransientError(ErrorCode.DLQ_DELIVERY_FAILED, str(exc)) from exc

    async def close(self, flush_timeout: float) -> int:
        """Stop polling and flush; returns how many dead letters were still unacknowledged."""
        return await self._producer.close(flush_timeout)
