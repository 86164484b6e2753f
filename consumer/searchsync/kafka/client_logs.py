"""librdkafka's log lines, routed to the ``searchsync.librdkafka`` logger and rate-limited per
facility (`LINES_PER_WINDOW` per `WINDOW_S`); the count of suppressed lines rides on the next one
let through."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

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


def client_logger() -> logging.Logger:
    logger = logging.getLogger(LOGGER_NAME)
    if not any(isinstance(f, RateLimit) for f in logger.filters):
        logger.addFilter(RateLimit())
    return logger


def routed(config: Mapping[str, Any]) -> dict[str, Any]:
    return {**config, "logger": client_logger()}
