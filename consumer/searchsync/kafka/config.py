"""The one builder of Kafka client settings. Every client's librdkafka log lines go to the
``searchsync.librdkafka`` logger (`routed`), rate-limited per facility (`LINES_PER_WINDOW` per
`WINDOW_S`; the count of suppressed lines rides on the next one let through). Every consumer
commits explicitly, and only what it finished: auto commit and the automatic offset store are
always off (docs/design.md, the commit protocol)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from searchsync.config import KafkaSettings

LOGGER_NAME: Final = "searchsync.librdkafka"
LINES_PER_WINDOW: Final = 5
WINDOW_S: Final = 60.0


class RateLimit(logging.Filter):
    """Lets at most `lines` records per `window_s` through per librdkafka facility (the first ``|``
    field); counts the rest in ``suppressed``."""

    def __init__(
        self,
        lines: int = LINES_PER_WINDOW,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._lines, self._window_s, self._clock = lines, window_s, clock
        self._windows: dict[str, tuple[float, int, int]] = {}  # start, let through, suppressed
        self._lock = threading.Lock()  # librdkafka may log from the thread that polls

    def filter(self, record: logging.LogRecord) -> bool:
        facility = str(record.args[0]) if isinstance(record.args, tuple) and record.args else ""
        now = self._clock()
        with self._lock:
            start, passed, suppressed = self._windows.get(facility, (now, 0, 0))
            if now - start >= self._window_s:
                start, passed = now, 0
            if passed >= self._lines:
                self._windows[facility] = (start, passed, suppressed + 1)
                return False
            self._windows[facility] = (start, passed + 1, 0)
        record.suppressed = suppressed
        return True


def routed(config: Mapping[str, Any]) -> dict[str, Any]:
    """`config` with the one `LOGGER_NAME` logger, rate-limited, for librdkafka's lines."""
    logger = logging.getLogger(LOGGER_NAME)
    if not any(isinstance(f, RateLimit) for f in logger.filters):
        logger.addFilter(RateLimit())
    return {**config, "logger": logger}


def consumer_config(
    base: Mapping[str, Any],
    *,
    group_id: str,
    auto_offset_reset: str = "earliest",
    partition_eof: bool = False,
) -> dict[str, Any]:
    """A consumer over `base` (bootstrap servers and ``[kafka] extra``)."""
    return {
        **base,
        "group.id": group_id,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": auto_offset_reset,
        "enable.partition.eof": partition_eof,
    }


def member_config(kafka: KafkaSettings) -> dict[str, Any]:
    """The group member's consumer: cooperative-sticky assignment and ``auto.offset.reset=error``
    (the intake starts a partition without a committed offset itself, and blocks one below the log
    start: `kafka.gaps`)."""
    return {
        **consumer_config(
            kafka.client_config(), group_id=kafka.group_id, auto_offset_reset="error"
        ),
        "partition.assignment.strategy": "cooperative-sticky",
        "session.timeout.ms": kafka.session_timeout_ms,
        "max.poll.interval.ms": kafka.max_poll_interval_ms,
    }
