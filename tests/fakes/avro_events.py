"""Thin events in Avro, framed as `searchsync.events.decode` reads them, for tests' messages."""

from __future__ import annotations

import enum
import io
import struct

import fastavro
from searchsync.events import (
    CONFLUENT_MAGIC,
    SINGLE_OBJECT_MAGIC,
    load_avro_schema,
)
from searchsync.types import ThinEvent


class AvroFraming(enum.StrEnum):
    """How an Avro-encoded thin event is framed on the wire."""

    CONFLUENT = "confluent"
    SINGLE_OBJECT = "single-object"


def encode_avro(event: ThinEvent, framing: AvroFraming, *, schema_id: int = 1) -> bytes:
    """Avro binary of ``thin_event.avsc`` framed as asked (`schema_id`: the Confluent header's)."""
    schema = load_avro_schema("thin_event")
    if framing is AvroFraming.CONFLUENT:
        header = CONFLUENT_MAGIC + struct.pack(">i", schema_id)
    else:
        canonical = fastavro.schema.to_parsing_canonical_form(schema)
        crc = int(fastavro.schema.fingerprint(canonical, "CRC-64-AVRO"), 16)
        header = SINGLE_OBJECT_MAGIC + struct.pack("<Q", crc)
    buffer = io.BytesIO(header)
    buffer.seek(len(header))
    fastavro.schemaless_writer(buffer, schema, event._asdict())
    return buffer.getvalue()
