"""Thin-event decoding: every accepted shape, every refusal code, and no crash on any bytes."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.errors import PoisonMessage
from searchsync.events import (
    MAX_REVISION,
    SINGLE_OBJECT_MAGIC,
    decode,
    encode_json,
)
from searchsync.types import Operation, ThinEvent

from tests.fakes.avro_events import AvroFraming, encode_avro

ROOT = Path(__file__).resolve().parents[2]
KNOWN = frozenset({"wiki_page"})
EVENT = ThinEvent(
    "7d5f7f3e-0000-4000-8000-000000000001", "wiki_page", "page-1", Operation.UPSERT, 3
)
FIELDS = {
    "event_id": EVENT.event_id,
    "aggregate_type": "wiki_page",
    "aggregate_id": "page-1",
    "operation": "UPSERT",
    "source_revision": 3,
}


def _decode(value: bytes | None, max_bytes: int = 256 * 1024) -> ThinEvent:
    return decode(value, max_bytes=max_bytes, known_types=KNOWN)


def _code(value: bytes | None, max_bytes: int = 256 * 1024) -> str:
    with pytest.raises(PoisonMessage) as caught:
        _decode(value, max_bytes)
    return caught.value.code


def _json(**changes: object) -> bytes:
    fields: dict[str, object] = {**FIELDS, **changes}
    return json.dumps({k: v for k, v in fields.items() if v is not _DROP}).encode()


_DROP = object()


@pytest.mark.parametrize("name", ["thin_event.avsc", "dlq_record.avsc"])
def test_packaged_schema_is_identical_to_the_source_copy(name: str) -> None:
    source = (ROOT / "schemas" / "avro" / name).read_bytes()
    packaged = (ROOT / "consumer" / "searchsync" / "_resources" / name).read_bytes()
    assert packaged == source


def test_expanded_json_object_is_the_event() -> None:
    assert _decode(encode_json(EVENT)) == EVENT


def test_unexpanded_json_string_holding_the_object() -> None:
    assert _decode(json.dumps(json.dumps(FIELDS)).encode()) == EVENT


@pytest.mark.parametrize("payload", [FIELDS, json.dumps(FIELDS)])
def test_schema_envelope_with_object_or_string_payload(payload: object) -> None:
    envelope = {"schema": {"type": "string", "optional": False}, "payload": payload}
    assert _decode(json.dumps(envelope).encode()) == EVENT


def test_extra_json_fields_are_ignored_for_forward_compatibility() -> None:
    assert _decode(_json(trace_id="abc")) == EVENT


@pytest.mark.parametrize("framing", list(AvroFraming))
def test_avro_framings_decode(framing: AvroFraming) -> None:
    assert _decode(encode_avro(EVENT, framing)) == EVENT


def test_confluent_schema_id_is_written_big_endian() -> None:
    assert encode_avro(EVENT, AvroFraming.CONFLUENT, schema_id=258)[:5] == b"\x00\x00\x00\x01\x02"


@pytest.mark.parametrize("value", [None, b""])
def test_empty(value: bytes | None) -> None:
    assert _code(value) == "EMPTY"


def test_too_large_is_checked_before_parsing() -> None:
    assert _code(b"\xff" * 101, max_bytes=100) == "TOO_LARGE"
    assert _decode(encode_json(EVENT), max_bytes=len(encode_json(EVENT))) == EVENT


@pytest.mark.parametrize(
    "value",
    [b"{", b"not json", b"\xff\xfe", b"[]", b"42", b'"just a string"', b"null", b'"[1]"'],
)
def test_bad_json(value: bytes) -> None:
    assert _code(value) == "BAD_JSON"


def test_deeply_nested_json_is_bad_json_not_a_crash() -> None:
    assert _code(b"[" * 5000 + b"]" * 5000) == "BAD_JSON"


@pytest.mark.parametrize(
    "value",
    [
        b"\x00",  # Confluent header cut short
        b"\x00\x00\x00\x00\x01",  # header but no body
        encode_avro(EVENT, AvroFraming.CONFLUENT) + b"\x00",  # trailing bytes
        encode_avro(EVENT, AvroFraming.CONFLUENT)[:-1],  # truncated body
        SINGLE_OBJECT_MAGIC + b"\x00" * 3,  # single-object header cut short
        SINGLE_OBJECT_MAGIC + b"\x01" * 8 + b"\x00",  # fingerprint of another schema
        b"\x00\x00\x00\x00\x01" + b"\x02\xff",  # invalid UTF-8 in a string
        b"\x00\x00\x00\x00\x01"
        + b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # varint overflow
    ],
)
def test_bad_avro(value: bytes) -> None:
    assert _code(value) == "BAD_AVRO"


def test_avro_enum_index_out_of_range_is_bad_avro() -> None:
    good = encode_avro(EVENT, AvroFraming.CONFLUENT)
    # operation is the byte before the revision varint (3 -> 0x06); index 0 -> set it to 7 (-> 0x0e)
    assert good[-2:] == b"\x00\x06"
    assert _code(good[:-2] + b"\x0e\x06") == "BAD_AVRO"


@pytest.mark.parametrize("field", list(FIELDS))
def test_missing_or_null_field(field: str) -> None:
    assert _code(_json(**{field: _DROP})) == "MISSING_FIELD"
    assert _code(_json(**{field: None})) == "MISSING_FIELD"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("event_id", 12),
        ("event_id", ""),
        ("event_id", "e" * 65),
        ("aggregate_type", ["wiki_page"]),
        ("aggregate_type", "t" * 65),
        ("aggregate_id", ""),
        ("aggregate_id", "i" * 129),
        ("aggregate_id", "a\x00b"),
        ("aggregate_id", "line\nbreak"),
        ("aggregate_id", {"id": 1}),
    ],
)
def test_bad_field(field: str, value: object) -> None:
    assert _code(_json(**{field: value})) == "BAD_FIELD"


def test_length_limits_are_inclusive() -> None:
    event = _decode(_json(event_id="e" * 64, aggregate_id="i" * 128))
    assert (len(event.event_id), len(event.aggregate_id)) == (64, 128)


@pytest.mark.parametrize("operation", ["upsert", "DELETE", "", 1, True, ["UPSERT"]])
def test_bad_operation(operation: object) -> None:
    assert _code(_json(operation=operation)) == "BAD_OPERATION"


@pytest.mark.parametrize("operation", list(Operation))
def test_every_operation_is_accepted(operation: Operation) -> None:
    assert _decode(_json(operation=operation.value)).operation is operation


@pytest.mark.parametrize(
    "raw",
    [b"0", b"-1", b"3.0", b'"3"', b"true", b"false", b"9223372036854775808", b"1e3", b"[3]"],
)
def test_bad_revision(raw: bytes) -> None:
    value = _json(source_revision=0).replace(b'"source_revision": 0', b'"source_revision": ' + raw)
    assert _code(value) == "BAD_REVISION"


def test_revision_bounds_are_inclusive() -> None:
    assert _decode(_json(source_revision=1)).source_revision == 1
    assert _decode(_json(source_revision=MAX_REVISION)).source_revision == MAX_REVISION


def test_avro_revision_zero_or_negative_is_bad_revision() -> None:
    for revision in (0, -5):
        body = encode_avro(EVENT, AvroFraming.CONFLUENT)[:-1]
        zigzag = (revision << 1) ^ (revision >> 63)
        assert _code(body + bytes([zigzag])) == "BAD_REVISION"


def test_unknown_aggregate_type() -> None:
    assert _code(_json(aggregate_type="invoice")) == "UNKNOWN_AGGREGATE_TYPE"
    avro = encode_avro(
        ThinEvent("e", "invoice", "1", Operation.REBUILD, 1), AvroFraming.SINGLE_OBJECT
    )
    assert _code(avro) == "UNKNOWN_AGGREGATE_TYPE"


_ids = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp", "Zs", "Cf", "Co", "Cn")),
    min_size=1,
    max_size=64,
)
_events = st.builds(
    ThinEvent,
    event_id=_ids,
    aggregate_type=st.just("wiki_page"),
    aggregate_id=_ids,
    operation=st.sampled_from(list(Operation)),
    source_revision=st.integers(1, MAX_REVISION),
)


@given(_events)
def test_json_round_trip(event: ThinEvent) -> None:
    assert _decode(encode_json(event)) == event


@given(_events, st.sampled_from(list(AvroFraming)), st.integers(0, 2**31 - 1))
def test_avro_round_trip(event: ThinEvent, framing: AvroFraming, schema_id: int) -> None:
    assert _decode(encode_avro(event, framing, schema_id=schema_id)) == event


_fingerprint = encode_avro(EVENT, AvroFraming.SINGLE_OBJECT)[:10]


@given(
    st.one_of(
        st.binary(max_size=300),
        st.binary(max_size=60).map(lambda b: b"\x00" + b),
        st.binary(max_size=60).map(lambda b: _fingerprint + b),
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers(-(2**63), 2**64 - 1)
            | st.floats()
            | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(
                    st.sampled_from([*FIELDS, "schema", "payload"]), inner, max_size=6
                )
            ),
            max_leaves=20,
        ).map(lambda doc: orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS)),
    )
)
def test_decode_of_arbitrary_bytes_raises_only_poison(value: bytes) -> None:
    try:
        event = decode(value, max_bytes=200, known_types=KNOWN)
    except PoisonMessage as exc:
        assert exc.code in {
            "EMPTY",
            "TOO_LARGE",
            "BAD_JSON",
            "BAD_AVRO",
            "MISSING_FIELD",
            "BAD_FIELD",
            "BAD_OPERATION",
            "BAD_REVISION",
            "UNKNOWN_AGGREGATE_TYPE",
        }
    else:
        assert isinstance(event, ThinEvent)
        assert 1 <= event.source_revision <= MAX_REVISION


def test_single_object_fingerprint_is_little_endian_crc64() -> None:
    from fastavro.schema import fingerprint, to_parsing_canonical_form
    from searchsync.events import load_avro_schema

    canonical = to_parsing_canonical_form(load_avro_schema("thin_event"))
    expected = struct.pack("<Q", int(fingerprint(canonical, "CRC-64-AVRO"), 16))
    assert _fingerprint == SINGLE_OBJECT_MAGIC + expected
