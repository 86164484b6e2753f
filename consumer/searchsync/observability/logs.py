"""Structured logs: one JSON object per line (every ``extra=`` field a top-level key), and the one
line per event outcome. Credential-like keys are masked at any depth, and each line has URL
passwords and configured secret values masked. `configure_logging` is called once by the CLI.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, TextIO

import orjson

from searchsync.config import MASK, SENSITIVE_KEY, scrub_credentials, scrub_known

EVENT_OUTCOME_MESSAGE: Final = "event outcome"
_MAX_DEPTH: Final = 8

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD_ATTRS: Final = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys() | {"message", "asctime"}
)


class JsonFormatter(logging.Formatter):
    """A record as one JSON line: ts, level, logger, msg, every extra field, exc; `secrets`
    (``Settings.secret_values()``) masked wherever they appear."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        super().__init__()
        # as they are, and as they look inside a JSON string (quotes, backslashes escaped)
        self._secrets = tuple({f for v in secrets for f in (v, orjson.dumps(v)[1:-1].decode())})

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="microseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and not key.startswith("_") and key not in entry:
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exc"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        masked = _mask(entry, 0)
        line = orjson.dumps(masked, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
        return scrub_known(scrub_credentials(line), self._secrets)


def _mask(value: Any, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        return repr(value)
    if isinstance(value, Mapping):
        return {k: MASK if _is_set_secret(k, v) else _mask(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask(v, depth + 1) for v in value]
    return value


def _is_set_secret(key: object, value: Any) -> bool:
    """A credential-looking key with a value: masked. An unset one (None) shows as unset."""
    return isinstance(key, str) and bool(SENSITIVE_KEY.search(key)) and value is not None


def configure_logging(
    level: str, stream: TextIO | None = None, *, secrets: tuple[str, ...] = ()
) -> logging.Handler:
    """Send records at `level` or above to `stream` (stderr) as JSON lines, `secrets` masked;
    replaces the root logger's handlers and returns the installed one."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    return handler


def log_event_outcome(
    logger: logging.Logger,
    *,
    error_code: str | None = None,
    error_message: str | None = None,
    **fields: Any,
) -> None:
    """Log how one event finished as one line (docs/design.md): `fields` are event_id,
    aggregate_type, aggregate_id, event_revision, loaded_revision, projection_schema_version,
    target_alias, operation, attempt, result, topic, partition and offset, in that order; then
    the error's code and message when set. DEBUG, or WARNING with a code."""
    if error_code is not None:
        fields["error_code"] = error_code
    if error_message is not None:
        fields["error_message"] = error_message
    level = logging.WARNING if error_code is not None else logging.DEBUG
    logger.log(level, EVENT_OUTCOME_MESSAGE, extra=fields)
