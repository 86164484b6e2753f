"""A sample dead letter for the DLQ tests."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from searchsync.dlq.record import DlqRecord
from searchsync.types import Operation, ThinEvent

DLQ_T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
"""When `dead_letter()`'s record first failed."""


def dead_letter(**changes: Any) -> DlqRecord:
    """A sample dead letter of page-1 from outbox.event.wiki_page/1/42; `changes` override."""
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
        first_failed_at=DLQ_T0,
        last_failed_at=DLQ_T0 + timedelta(seconds=30),
        event=ThinEvent("e1", "wiki_page", "page-1", Operation.UPSERT, 7),
        projection_schema_version=2,
    )
    return replace(base, **changes)
