"""librdkafka's log lines: routed to the JSON logger, rate-limited per facility."""

from __future__ import annotations

import logging

from searchsync.kafka.config import LOGGER_NAME, RateLimit, routed


def _record(facility: str) -> logging.LogRecord:
    return logging.LogRecord(
        LOGGER_NAME, logging.ERROR, __file__, 1, "%s [%s] %s", (facility, "rdkafka#1", "x"), None
    )


def test_at_most_n_lines_per_window_per_facility_then_the_count() -> None:
    now = [0.0]
    limit = RateLimit(lines=2, window_s=10.0, clock=lambda: now[0])
    assert [limit.filter(_record("FAIL")) for _ in range(5)] == [True, True, False, False, False]
    assert limit.filter(_record("CONFWARN"))  # another facility has its own budget
    now[0] = 10.0
    again = _record("FAIL")
    assert limit.filter(again) and again.suppressed == 3


def test_every_client_config_carries_the_one_logger() -> None:
    config = routed({"bootstrap.servers": "127.0.0.1:1"})
    logger = logging.getLogger(LOGGER_NAME)
    assert config["logger"] is logger and config["bootstrap.servers"] == "127.0.0.1:1"
    assert routed({})["logger"] is logger
    assert sum(isinstance(f, RateLimit) for f in logger.filters) == 1
