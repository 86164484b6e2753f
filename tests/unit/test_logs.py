"""JSON logs: one line per record, extra fields on top, secrets masked, event outcome fields."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from datetime import datetime

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.config import Secret
from searchsync.observability.logs import JsonFormatter, configure_logging, log_event_outcome
from searchsync.types import Operation

SEED_FIELDS = [
    "event_id",
    "aggregate_type",
    "aggregate_id",
    "event_revision",
    "loaded_revision",
    "projection_schema_version",
    "target_alias",
    "operation",
    "attempt",
    "result",
]


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    out = io.StringIO()
    configure_logging("debug", out)
    yield out
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in stream.getvalue().splitlines()]


def test_one_json_line_with_extras(stream: io.StringIO) -> None:
    logging.getLogger("x.y").info("hello %s", "world", extra={"n": 3, "tags": ("a", "b")})
    [line] = _lines(stream)
    assert line["msg"] == "hello world"
    assert line["level"] == "INFO"
    assert line["logger"] == "x.y"
    assert line["n"] == 3
    assert line["tags"] == ["a", "b"]
    stamp = datetime.fromisoformat(str(line["ts"]))
    assert stamp.utcoffset() is not None and stamp.utcoffset().total_seconds() == 0  # type: ignore[union-attr]


def test_secrets_are_masked_at_any_depth(stream: io.StringIO) -> None:
    logging.getLogger("s").warning(
        "cfg",
        extra={
            "password": "hunter2",
            "config": {"mysql": {"Password": "hunter2", "user": "u"}, "api_key": "k"},
            "items": [{"token": "t"}],
            "secret": Secret("s3"),
            "wrapped": Secret("hunter2"),
            "kafka": {"sasl_jaas_config": "jaas-value", "ssl_key_pem": "pem-value"},
            "credentials_file": "cred-value",
        },
    )
    text = stream.getvalue()
    assert "hunter2" not in text and '"k"' not in text and '"t"' not in text
    [line] = _lines(stream)
    assert line["password"] == "***"
    assert line["config"] == {"mysql": {"Password": "***", "user": "u"}, "api_key": "***"}
    assert line["wrapped"] == "***"
    # the settings' own notion of a credential key (`SENSITIVE_KEY`), not a narrower one
    assert line["kafka"] == {"sasl_jaas_config": "***", "ssl_key_pem": "***"}
    assert line["credentials_file"] == "***"


def test_unset_secrets_show_as_unset(stream: io.StringIO) -> None:
    logging.getLogger("s").warning(
        "cfg", extra={"config": {"kafka": {"sasl_password": None, "api_key": None, "token": "t"}}}
    )
    [line] = _lines(stream)
    assert line["config"] == {"kafka": {"sasl_password": None, "api_key": None, "token": "***"}}


def test_exceptions_become_an_exc_string(stream: io.StringIO) -> None:
    try:
        raise ValueError("bad")
    except ValueError:
        logging.getLogger("e").exception("failed")
    [line] = _lines(stream)
    assert "ValueError: bad" in str(line["exc"])


def test_level_filters_and_reconfigure_does_not_duplicate(stream: io.StringIO) -> None:
    configure_logging("WARNING", stream)
    logging.getLogger("l").info("hidden")
    logging.getLogger("l").warning("shown")
    assert [line["msg"] for line in _lines(stream)] == ["shown"]
    with pytest.raises(ValueError):
        configure_logging("LOUD", stream)


def test_event_outcome_has_seed_field_names(stream: io.StringIO) -> None:
    log_event_outcome(
        logging.getLogger("searchsync.stream.pipeline"),
        event_id="evt-001",
        aggregate_type="wiki_page",
        aggregate_id="page_001",
        event_revision=41,
        loaded_revision=42,
        projection_schema_version=2,
        target_alias="kb_gateway_wiki",
        operation=Operation.UPSERT,
        attempt=3,
        result="applied",
        topic="outbox.event.wiki_page",
        partition=1,
        offset=7,
    )
    log_event_outcome(
        logging.getLogger("searchsync.stream.pipeline"),
        event_id=None,
        aggregate_type=None,
        aggregate_id=None,
        event_revision=None,
        loaded_revision=None,
        projection_schema_version=None,
        target_alias=None,
        operation=None,
        attempt=1,
        result="dead_lettered",
        error_code="BAD_JSON",
        error_message="not JSON",
        topic="t",
        partition=0,
        offset=0,
    )
    ok, dead = _lines(stream)
    assert [k for k in ok if k in SEED_FIELDS] == SEED_FIELDS
    assert ok["operation"] == "UPSERT" and ok["event_revision"] == 41 and ok["offset"] == 7
    assert ok["level"] == "DEBUG" and "error_code" not in ok  # successes: DEBUG
    assert dead["level"] == "WARNING"
    assert dead["error_code"] == "BAD_JSON" and dead["error_message"] == "not JSON"


@given(
    st.dictionaries(
        st.from_regex(r"x_[a-z]{1,8}", fullmatch=True)
        | st.sampled_from(["x_password", "db_secret", "x_token"]),
        st.text(),
        max_size=5,
    )
)
def test_any_extra_round_trips_as_one_line(extra: dict[str, str]) -> None:
    record = logging.LogRecord("h", logging.INFO, __file__, 1, "m\nm", None, None)
    for key, value in extra.items():
        setattr(record, key, value)
    text = JsonFormatter().format(record)
    assert "\n" not in text
    decoded = orjson.loads(text)
    assert decoded["msg"] == "m\nm"
    for key, value in extra.items():
        words = ("password", "passwd", "secret", "token", "credential", "apikey", "pem", "jaas")
        masked = any(word in key for word in words)
        assert decoded[key] == ("***" if masked else value)
