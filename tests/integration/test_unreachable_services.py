"""A service that cannot be reached: the command ends with one line naming the address and the
setting to check, exit 1, and librdkafka's retries never flood stderr. Each service in turn is
pointed at a closed port of the real host while the others are the real stack."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.integration.test_cli_real import _searchsync

pytestmark = pytest.mark.integration

CLOSED = "127.0.0.1:1"
MAX_STDERR_LINES = 3


KAFKA_COMMANDS = (("offsets", "show"), ("dlq", "inspect"), ("dlq", "summary"))


def _run_all(
    commands: tuple[tuple[str, ...], ...], env: dict[str, str]
) -> list[subprocess.CompletedProcess[str]]:
    with ThreadPoolExecutor(len(commands)) as pool:
        return list(pool.map(lambda argv: _searchsync(*argv, env=env), commands))


def _one_line_naming(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    lines = result.stderr.splitlines()
    assert result.returncode == 1, result.stderr
    assert 1 <= len(lines) <= MAX_STDERR_LINES, result.stderr
    assert all(needle in lines[-1] for needle in needles), lines[-1]


def test_kafka_down_is_one_line_naming_the_brokers_and_the_setting() -> None:
    env = {"SEARCHSYNC_KAFKA_BOOTSTRAP_SERVERS": CLOSED}
    for result in _run_all(KAFKA_COMMANDS, env):
        _one_line_naming(result, f"Kafka at {CLOSED}", "kafka.bootstrap_servers", "unreachable")
        assert "FAIL" not in result.stderr and "KafkaError{" not in result.stderr


KAFKA_TIMED = (
    ("offsets", "show"),
    ("offsets", "reset", "--to", "earliest"),
    ("dlq", "summary"),
    ("dlq", "replay", "--execute"),
)


def test_with_a_short_timeout_a_kafka_command_gives_up_well_before_the_default() -> None:
    env = {"SEARCHSYNC_KAFKA_BOOTSTRAP_SERVERS": CLOSED}
    with ThreadPoolExecutor(len(KAFKA_TIMED)) as pool:
        results = list(  # the default timeout is 15 s: 10 s leave room for start-up, not for it
            pool.map(
                lambda argv: _searchsync(*argv, "--timeout", "1", env=env, deadline_s=10),
                KAFKA_TIMED,
            )
        )
    for result in results:
        _one_line_naming(result, f"Kafka at {CLOSED}", "kafka.bootstrap_servers", "unreachable")


def test_kafka_down_in_status_is_one_line_naming_the_brokers_and_each_section() -> None:
    result = _searchsync("status", env={"SEARCHSYNC_KAFKA_BOOTSTRAP_SERVERS": CLOSED})
    assert result.returncode == 4 and result.stderr == ""
    named = f"Kafka at {CLOSED} (setting kafka.bootstrap_servers)"
    problems = [line for line in result.stdout.splitlines() if line.startswith("  problem:")]
    [kafka] = [p for p in problems if named in p]
    assert kafka.startswith("  problem: group, dlq: could not check"), result.stdout


def test_mysql_down_is_one_line_naming_the_address_and_the_settings() -> None:
    result = _searchsync(
        "outbox", "prune", "--older-than", "7d", env={"SEARCHSYNC_MYSQL_PORT": "1"}
    )
    _one_line_naming(result, "MySQL at 127.0.0.1:1", "mysql.host", "mysql.port")


def test_elasticsearch_down_is_one_line_naming_the_hosts_and_the_setting() -> None:
    env = {"SEARCHSYNC_ELASTICSEARCH_HOSTS": f"http://{CLOSED}"}
    result = _searchsync("index", "list", env=env)
    _one_line_naming(result, f"Elasticsearch at http://{CLOSED}", "elasticsearch.hosts")
