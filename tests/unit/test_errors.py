"""The error-code table: every code has one disposition, and the drawings of it agree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import searchsync.errors
from searchsync.errors import (
    Disposition,
    ErrorCode,
    PoisonMessage,
    RevisionRegression,
    TransientError,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "consumer.md"


def test_every_code_has_a_disposition_and_its_name_is_its_wire_value() -> None:
    for code in ErrorCode:
        assert isinstance(code.disposition, Disposition)
        assert code.value == code.name
        assert str(code) == code.value and f"{code}" == code.value


def test_only_shared_dependencies_are_systemic() -> None:
    systemic = {c.value for c in ErrorCode if c.disposition is Disposition.SYSTEMIC}
    assert systemic == {
        "MYSQL_UNAVAILABLE",
        "ES_UNAVAILABLE",
        "ES_TIMEOUT",
        "ES_429",
        "ES_5XX",
        "ES_BLOCKED",
        "ES_AUTH",
        "ALIAS_MISSING",
        "SCHEMA_FENCED",
        "OWNER_FENCED",
        "KAFKA_NO_LEADER",
        "DLQ_QUEUE_FULL",
        "DLQ_PRODUCE_FAILED",
        "DLQ_DELIVERY_FAILED",
        "DLQ_READ_FAILED",
        "DLQ_READ_TIMEOUT",
        "REPLAY_FAILED",
        "REPLAY_TIMEOUT",
    }


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (ErrorCode.PROJECTION_ERROR, Disposition.POISON),
        (ErrorCode.BAD_JSON, Disposition.POISON),
        (ErrorCode.REVISION_REGRESSION, Disposition.POISON),
        (ErrorCode.MAPPING_ERROR, Disposition.POISON),
        (ErrorCode.INTERNAL, Disposition.TRANSIENT),
        (ErrorCode.MYSQL_DEADLOCK, Disposition.TRANSIENT),
        (ErrorCode.ES_409_UNCONFIRMED, Disposition.TRANSIENT),
        (ErrorCode.MYSQL_UNAVAILABLE, Disposition.SYSTEMIC),
        (ErrorCode.ALIAS_MISSING, Disposition.SYSTEMIC),
    ],
)
def test_dispositions(code: ErrorCode, expected: Disposition) -> None:
    assert code.disposition is expected


def test_exceptions_carry_the_code_and_show_its_wire_value() -> None:
    poison = PoisonMessage(ErrorCode.BAD_FIELD, "too long")
    assert poison.code is ErrorCode.BAD_FIELD
    assert str(poison) == "BAD_FIELD: too long"
    assert RevisionRegression("went back").code is ErrorCode.REVISION_REGRESSION
    transient = TransientError(ErrorCode.ES_429, "busy")
    assert (transient.code, transient.message, str(transient)) == (
        ErrorCode.ES_429,
        "busy",
        "ES_429: busy",
    )


def _drawn(text: str, row: str) -> dict[str, str]:
    return {m.group(1): m.group(2).upper() for m in re.finditer(row, text, re.MULTILINE)}


def test_the_table_in_the_docstring_is_the_table() -> None:
    doc = searchsync.errors.__doc__ or ""
    drawn = _drawn(doc, r"^    ([A-Z][A-Z0-9_]+) +(POISON|TRANSIENT|SYSTEMIC) ")
    assert drawn == {c.value: c.disposition.name for c in ErrorCode}


def test_the_table_in_docs_consumer_md_is_the_table() -> None:
    drawn = _drawn(
        DOCS.read_text("utf-8"), r"^\| `([A-Z][A-Z0-9_]+)` \| (poison|transient|systemic) \|"
    )
    assert drawn == {c.value: c.disposition.name for c in ErrorCode}
