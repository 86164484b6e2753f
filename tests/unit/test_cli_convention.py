"""The CLI's one convention, through ``main(argv, runtime=...)`` on fakes: a command that changes
state plans by default and acts with ``--execute``; a command that reaches Kafka takes
``--timeout SECONDS`` and gives up after it naming ``kafka.bootstrap_servers``;
``offsets show --group``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from confluent_kafka import KafkaError, KafkaException
from runtime_fakes import Fakes, tables_of
from searchsync.cli import main
from searchsync.exit_codes import ExitCode
from searchsync.relay.port import DEAD, PENDING
from searchsync.resources import KafkaClients

from tests.fakes.kafka_admin import FakeTopics
from tests.fakes.relay_store import FakeRelayStore
from tests.fakes.replay_ledger import FakeReplayLedger

TOPIC = "outbox.event.wiki_page"
PLAN_ONLY = "plan only, nothing changed: add --execute to act"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("SEARCHSYNC_"):
            monkeypatch.delenv(name)
    yield


# --- relay revive --------------------------------------------------------------------------------


def _dead_rows() -> FakeRelayStore:
    store = FakeRelayStore()
    for page in ("a", "b"):
        store.rows[store.add(page)].status = DEAD
    return store


@pytest.mark.parametrize("flag", [[], ["--dry-run"]])
def test_relay_revive_plans_by_default(capsys: pytest.CaptureFixture[str], flag: list[str]) -> None:
    store = _dead_rows()
    services = Fakes(tables=tables_of(relay=store))
    assert main(["relay", "revive", "--id", "1", *flag], runtime=services) == ExitCode.OK
    captured = capsys.readouterr()
    assert "would revive 1 DEAD rows" in captured.out and PLAN_ONLY in captured.err
    assert main(["relay", "revive", "--all", "--json", *flag], runtime=services) == ExitCode.OK
    plan = orjson.loads(capsys.readouterr().out)
    assert plan["dry_run"] is True and [r["id"] for r in plan["rows"]] == [1, 2]
    assert [r.status for r in store.rows.values()] == [DEAD, DEAD]  # nothing changed


def test_relay_revive_with_execute_revives(capsys: pytest.CaptureFixture[str]) -> None:
    store = _dead_rows()
    argv = ["relay", "revive", "--id", "2", "--execute", "--json"]
    assert main(argv, runtime=Fakes(tables=tables_of(relay=store))) == ExitCode.OK
    assert orjson.loads(capsys.readouterr().out) == {"dry_run": False, "revived": 1}
    assert [r.status for r in store.rows.values()] == [DEAD, PENDING]


def test_relay_revive_takes_execute_or_dry_run_not_both(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["relay", "revive", "--all", "--execute", "--dry-run"]
    assert main(argv) == ExitCode.USAGE
    assert "not allowed with argument" in capsys.readouterr().err


# --- --timeout -----------------------------------------------------------------------------------


def _kafka() -> FakeTopics:
    kafka = FakeTopics()
    kafka.topic(TOPIC, [b""] * 10)
    kafka.commits[("searchsync", (TOPIC, 0))] = 5
    kafka.commits[("rebuild-catchup", (TOPIC, 0))] = 8
    return kafka


def _services(kafka: FakeTopics) -> Fakes:
    clients = KafkaClients(admin=kafka.admin, consumer=kafka.consumer, producer=kafka.producer)
    return Fakes(kafka=clients, replay_ledger=FakeReplayLedger())


KAFKA_COMMANDS = [
    ["offsets", "show"],
    ["offsets", "reset", "--to", "earliest"],
    ["dlq", "inspect"],
    ["dlq", "summary"],
    ["dlq", "replay"],
]


@pytest.mark.parametrize("argv", KAFKA_COMMANDS)
def test_kafka_commands_use_the_timeout(argv: list[str]) -> None:
    kafka = _kafka()
    assert main([*argv, "--timeout", "2.5"], runtime=_services(kafka)) == ExitCode.OK
    assert kafka.admin_timeouts and set(kafka.admin_timeouts) == {2.5}
    default = _kafka()
    assert main(argv, runtime=_services(default)) == ExitCode.OK
    assert set(default.admin_timeouts) == {15.0}


@pytest.mark.parametrize("argv", KAFKA_COMMANDS)
@pytest.mark.parametrize("bad", ["0", "-1", "soon", "nan", "3601"])
def test_a_bad_timeout_is_a_usage_error_naming_the_flag(
    capsys: pytest.CaptureFixture[str], argv: list[str], bad: str
) -> None:
    assert main([*argv, "--timeout", bad]) == ExitCode.USAGE
    assert "argument --timeout: expected seconds above 0" in capsys.readouterr().err


@pytest.mark.parametrize("argv", KAFKA_COMMANDS)
def test_a_kafka_timeout_exits_1_naming_the_bootstrap_setting(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    away = KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to get metadata: timed out"))
    kafka = FakeTopics(fail_with=away)
    assert main([*argv, "--timeout", "1"], runtime=_services(kafka)) == ExitCode.FAILURE
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(
        "error: Kafka at 127.0.0.1:9092 (setting kafka.bootstrap_servers) is unreachable"
    )


# --- offsets show --group ----------------------------------------------------------------------


def _offsets(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    assert main(["offsets", "show", "--json", *argv], runtime=_services(_kafka())) == ExitCode.OK
    return orjson.loads(capsys.readouterr().out)


def test_offsets_show_of_another_group(capsys: pytest.CaptureFixture[str]) -> None:
    live = _offsets([], capsys)
    assert live["group"] == "searchsync" and live["partitions"][0]["committed"] == 5
    catchup = _offsets(["--group", "rebuild-catchup"], capsys)
    assert catchup["group"] == "rebuild-catchup" and catchup["partitions"][0]["committed"] == 8
    assert catchup["total_lag"] == 2
    never = _offsets(["--group", "nobody"], capsys)
    assert never["partitions"][0]["committed"] is None


def test_exporter_once_asks_the_broker_with_the_timeout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SEARCHSYNC_CANARY_INTERVAL_S", "0")  # no canary: Kafka alone
    kafka = _kafka()
    assert main(["exporter", "--once", "--timeout", "2.5"], runtime=_services(kafka)) == 0
    assert "searchsync_exporter_up 1.0" in capsys.readouterr().out
    assert set(kafka.admin_timeouts) == {2.5}
