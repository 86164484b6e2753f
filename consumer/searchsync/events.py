"""Decode thin events from Kafka message values, and encode them as the outbox's JSON.

`decode` returns a valid `ThinEvent` or raises `PoisonMessage` with a stable code, nothing else
(invariant 10). ``0x00`` starts the Confluent Avro frame, ``0xC3 0x01`` Avro single-object
encoding; anything else is JSON as Debezium's Outbox Event Router emits it.
"""

from __future__ import annotations

import functools
import io
import struct
from collections.abc import Collection, Mapping
from importlib import resources
from typing import Any, Final, cast

import fastavro
import orjson

from searchsync.errors import ErrorCode, PoisonMessage
from searchsync.types import Operation, ThinEvent

CONFLUENT_MAGIC: Final = b"\x00"
SINGLE_OBJECT_MAGIC: Final = b"\xc3\x01"
_CONFLUENT_HEADER: Final = 5  # magic + big-endian int32 schema id
_SINGLE_OBJECT_HEADER: Final = 10  # magic + little-endian uint64 fingerprint

MAX_REVISION: Final = 2**63 - 1  # Elasticsearch external versions are signed longs
MAX_EVENT_ID_LENGTH: Final = 64
MAX_AGGREGATE_TYPE_LENGTH: Final = 64
MAX_AGGREGATE_ID_LENGTH: Final = 128  # search_outbox.aggregate_id is VARCHAR(128)

_FIELDS: Final = ("event_id", "aggregate_type", "aggregate_id", "operation", "source_revision")
_STRING_LIMITS: Final = (MAX_EVENT_ID_LENGTH, MAX_AGGREGATE_TYPE_LENGTH, MAX_AGGREGATE_ID_LENGTH)
_OPERATION_OF: Final = {op.value: op for op in Operation}
_bad_avro: Final = functools.partial(PoisonMessage, ErrorCode.BAD_AVRO)


@functools.cache
def load_avro_schema(name: str) -> Any:
    """Parse the packaged copy of ``schemas/avro/<name>.avsc`` once, on first use."""
    text = resources.files("searchsync").joinpath("_resources", f"{name}.avsc").read_bytes()
    return fastavro.parse_schema(orjson.loads(text))


@functools.cache
def _thin_event_fingerprint() -> bytes:
    """The 8-byte little-endian CRC-64-AVRO fingerprint that single-object encoding carries."""
    canonical = fastavro.schema.to_parsing_canonical_form(load_avro_schema("thin_event"))
    value = int(fastavro.schema.fingerprint(canonical, "CRC-64-AVRO"), 16)
    return struct.pack("<Q", value)


def decode(value: bytes | None, *, max_bytes: int, known_types: Collection[str]) -> ThinEvent:
    """Decode and validate one Kafka message value, or raise `PoisonMessage`."""
    if not value:
        raise PoisonMessage(ErrorCode.EMPTY, "the message has no value")
    if len(value) > max_bytes:
        raise PoisonMessage(
            ErrorCode.TOO_LARGE, f"{len(value)} bytes exceeds the limit of {max_bytes}"
        )
    if value[:1] == CONFLUENT_MAGIC:
        fields = _read_avro(value, _CONFLUENT_HEADER, "Confluent")
    elif value[:2] == SINGLE_OBJECT_MAGIC:
        fields = _read_avro(value, _SINGLE_OBJECT_HEADER, "single-object")
    else:  # the event object, expanded, as a JSON string, or in a {"schema", "payload"} envelope
        document = _loads(value)
        if isinstance(document, str):
            document = _loads(document)
        if isinstance(document, dict) and "payload" in document and "schema" in document:
            document = document["payload"]
            if isinstance(document, str):
                document = _loads(document)
        if not isinstance(document, dict):
            raise PoisonMessage(
                ErrorCode.BAD_JSON, f"expected a JSON object, got {type(document).__name__}"
            )
        fields = document
    return _validate(fields, known_types)


def encode_json(event: ThinEvent) -> bytes:
    """The JSON form the outbox `payload` column holds and Debezium publishes expanded."""
    return orjson.dumps(event._asdict())  # the operation as its value


def _read_avro(value: bytes, start: int, framing: str) -> Mapping[str, object]:
    if len(value) < start:
        raise _bad_avro(f"{framing} frame shorter than its {start}-byte header")
    fingerprint = value[2:start]
    if start == _SINGLE_OBJECT_HEADER and fingerprint != _thin_event_fingerprint():
        raise _bad_avro(f"unknown writer schema fingerprint {fingerprint.hex()} (not ThinEvent)")
    buffer = io.BytesIO(value)
    buffer.seek(start)
    try:
        record = fastavro.schemaless_reader(buffer, load_avro_schema("thin_event"), None)
    except Exception as exc:  # untrusted bytes: fastavro raises many types; all mean the same
        raise _bad_avro(f"cannot read ThinEvent: {type(exc).__name__}") from exc
    if buffer.tell() != len(value):
        raise _bad_avro(f"{len(value) - buffer.tell()} trailing bytes after event")
    if not isinstance(record, dict):
        raise _bad_avro("Avro body is not a record")
    return record


def _loads(text: bytes | str) -> object:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise PoisonMessage(ErrorCode.BAD_JSON, f"not valid JSON: {exc}") from exc


def _validate(fields: Mapping[str, object], known_types: Collection[str]) -> ThinEvent:
    event_id, aggregate_type, aggregate_id, operation, revision = map(fields.get, _FIELDS)
    if None in (event_id, aggregate_type, aggregate_id, operation, revision):
        missing = [name for name in _FIELDS if fields.get(name) is None]
        raise PoisonMessage(ErrorCode.MISSING_FIELD, f"missing or null: {', '.join(missing)}")
    # the common case in one test per field; anything else takes the checks that name the fault
    if not (
        type(event_id) is str
        and 0 < len(event_id) <= MAX_EVENT_ID_LENGTH
        and event_id.isprintable()
        and type(aggregate_type) is str
        and 0 < len(aggregate_type) <= MAX_AGGREGATE_TYPE_LENGTH
        and aggregate_type.isprintable()
        and type(aggregate_id) is str
        and 0 < len(aggregate_id) <= MAX_AGGREGATE_ID_LENGTH
        and aggregate_id.isprintable()
    ):
        for name, limit in zip(_FIELDS[:3], _STRING_LIMITS, strict=True):
            value = fields[name]
            if not isinstance(value, str):
                problem = f"must be a string, got {type(value).__name__}"
            elif not value or len(value) > limit:
                problem = f"must be 1..{limit} characters, got {len(value)}"
            elif not value.isprintable():
                problem = "contains control or unprintable characters"
            else:
                continue
            raise PoisonMessage(ErrorCode.BAD_FIELD, f"{name} {problem}")
    op = _OPERATION_OF.get(operation) if isinstance(operation, str) else None
    if op is None:
        raise PoisonMessage(
            ErrorCode.BAD_OPERATION,
            f"operation must be one of {sorted(_OPERATION_OF)}, got {operation!r:.80}",
        )
    # bool is an int subclass and floats like 3.0 compare equal to ints: both are refused.
    if type(revision) is not int or not 1 <= revision <= MAX_REVISION:
        raise PoisonMessage(
            ErrorCode.BAD_REVISION,
            f"source_revision must be an integer in 1..2^63-1, got {revision!r:.80}",
        )
    if not isinstance(aggregate_type, str) or aggregate_type not in known_types:
        raise PoisonMessage(
            ErrorCode.UNKNOWN_AGGREGATE_TYPE, f"no projector for {aggregate_type!r}"
        )
    return ThinEvent(cast(str, event_id), aggregate_type, cast(str, aggregate_id), op, revision)
