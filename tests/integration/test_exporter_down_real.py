"""Kafka away, seen from the watching side on the real host: `exporter --once` exits 1 with one
line naming the setting and publishes ``searchsync_exporter_up 0`` and no value at all for what it
could not observe; `status --timeout` ends on time with one line for the service."""

from __future__ import annotations

import pytest

from tests.integration.test_cli_real import _searchsync

pytestmark = pytest.mark.integration

CLOSED = "127.0.0.1:1"
UNOBSERVED = (
    "outbox_pending_count",
    "outbox_oldest_pending_age_seconds",
    "searchsync_group_members",
    "searchsync_group_lag",
    "searchsync_group_oldest_unfinished_age_seconds",
)


def test_exporter_once_with_kafka_down_exits_1_and_publishes_no_unobserved_value() -> None:
    env = {"SEARCHSYNC_KAFKA_BOOTSTRAP_SERVERS": CLOSED, "SEARCHSYNC_CANARY_INTERVAL_S": "0"}
    result = _searchsync("exporter", "--once", env=env)
    assert result.returncode == 1, result.stderr
    [line] = result.stderr.splitlines()  # no librdkafka FAIL lines, no log lines
    assert line.startswith(f"error: Kafka at {CLOSED} (setting kafka.bootstrap_servers)"), line
    samples = [s for s in result.stdout.splitlines() if s and not s.startswith("#")]
    assert "searchsync_exporter_up 0.0" in samples
    assert 'searchsync_exporter_errors_total{probe="group"} 1.0' in samples
    for name in UNOBSERVED:
        assert not [s for s in samples if s.split("{")[0].split(" ")[0] == name], name
        assert f"# TYPE {name} gauge" in result.stdout  # the family is known, its value is not


def test_exporter_once_with_kafka_up_publishes_up_1_and_the_backlog() -> None:
    result = _searchsync("exporter", "--once", env={"SEARCHSYNC_CANARY_INTERVAL_S": "0"})
    assert result.returncode == 0, result.stderr
    samples = result.stdout.splitlines()
    assert "searchsync_exporter_up 1.0" in samples
    assert any(s.startswith("outbox_pending_count ") for s in samples)
    assert any(s.startswith("searchsync_group_members ") for s in samples)


def test_status_with_kafka_down_ends_within_its_timeout_with_one_line_for_kafka() -> None:
    env = {"SEARCHSYNC_KAFKA_BOOTSTRAP_SERVERS": CLOSED}
    # the Kafka probes alone would wait 15 s and more: the process must end long before
    result = _searchsync("status", "--timeout", "2", env=env, deadline_s=12)
    assert result.returncode == 4, result.stderr
    kafka = [s for s in result.stdout.splitlines() if f"Kafka at {CLOSED}" in s]
    assert kafka == [
        f"  problem: group, dlq: could not check: no answer within 2 s from Kafka at {CLOSED}"
        " (setting kafka.bootstrap_servers)"
    ]
