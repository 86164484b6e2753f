"""Which dead letters an operator means: the selection `dlq inspect`, `summary` and `replay` take.
Its `selection` is the canonical form a replay records in the ledger, so two replays with the same
flags record the same selection (docs/design.md, "DLQ replay ledger")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from searchsync.dlq.record import DlqRecord
from searchsync.errors import InvalidRequest


def parse_utc(text: str) -> datetime:
    """An ISO-8601 time with an explicit UTC offset (``2026-11-30T12:00:00Z``), as aware UTC.
    Raises `InvalidRequest` for anything else: a time without an offset is ambiguous."""
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidRequest(
            f"expected an ISO-8601 UTC time like 2026-11-30T12:00:00Z, got {text!r}"
        ) from None
    if at.tzinfo is None or at.utcoffset() is None:
        raise InvalidRequest(f"{text!r} has no time zone: add Z (UTC) or an offset like +00:00")
    return at.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class DlqFilter:
    """Matches on the record's error code, aggregate type and id, event id and the time it last
    failed (``since`` inclusive, ``until`` exclusive, both timezone-aware). None matches all."""

    error_code: str | None = None
    aggregate_type: str | None = None
    aggregate_id: str | None = None
    event_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def __post_init__(self) -> None:
        for name, at in (("since", self.since), ("until", self.until)):
            if at is not None and at.utcoffset() is None:
                raise InvalidRequest(f"--{name} must name a time zone")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise InvalidRequest(
                f"--since {self.since.isoformat()} is not before --until {self.until.isoformat()}"
            )

    def matches(self, record: DlqRecord) -> bool:
        return (
            (self.error_code is None or record.last_error_code == self.error_code)
            and (self.aggregate_type is None or record.aggregate_type == self.aggregate_type)
            and (self.aggregate_id is None or record.aggregate_id == self.aggregate_id)
            and (self.event_id is None or record.event_id == self.event_id)
            and (self.since is None or record.last_failed_at >= self.since)
            and (self.until is None or record.last_failed_at < self.until)
        )

    def selection(self) -> dict[str, Any]:
        """The filters that are set, as JSON-ready values (times in UTC ISO-8601)."""
        chosen: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, datetime):
                value = value.astimezone(UTC).isoformat()
            if value is not None:
                chosen[name] = value
        return chosen
