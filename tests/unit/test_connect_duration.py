"""The Kafka Connect status client, durations, the [retention]/[connect] settings, and the
`tombstones purge` / `outbox prune` commands on fakes."""

from __future__ import annotations

import json
from contextlib import aclosing
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from purge_fakes import FakeConnect
from runtime_fakes import Fakes, search_of, tables_of
from searchsync.cli import main
from searchsync.config import ConnectSettings, load_settings
from searchsync.duration import format_duration, parse_duration
from searchsync.errors import ConfigError, ConnectUnavailable
from searchsync.exit_codes import ExitCode
from searchsync.kafka.connect import MISSING, ConnectClient, ConnectorStatus, parse_status
from searchsync.projection import format_timestamp, wiki_page

from tests.fakes.connect_rest import FakeConnectRest
from tests.fakes.outbox import FakeOutbox
from tests.fakes.search_index import InMemoryIndex

STATUS = {
    "name": "searchsync-outbox",
    "connector": {"state": "RUNNING", "worker_id": "127.0.0.1:8083"},
    "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "127.0.0.1:8083"}],
    "type": "source",
}

# -- Connect ---------------------------------------------------------------------------------------


async def ask(
    answer: tuple[int, bytes] | None, name: str | None = None
) -> tuple[ConnectorStatus, list[str]]:
    """`ConnectClient.status(name)` of a Connect that answers `answer` (None: no answer)."""
    async with FakeConnectRest(lambda method, path: answer or (0, b"")) as rest:
        rest.down = answer is None
        async with aclosing(ConnectClient(rest.settings)) as connect:
            return await connect.status(name), rest.requests


async def test_a_running_connector() -> None:
    status, requests = await ask((200, json.dumps(STATUS).encode()))
    assert requests == ["GET /connectors/searchsync-outbox/status"]
    assert status.running and status.problems() == []
    assert status.as_json()["tasks"][0]["state"] == "RUNNING"


def test_a_failed_task_says_why() -> None:
    body = {**STATUS, "tasks": [{"id": 0, "state": "FAILED", "trace": "java.lang.X: bad\n\tat"}]}
    status = parse_status("searchsync-outbox", body)
    assert not status.running
    assert status.problems() == ["task 0 of searchsync-outbox is FAILED: java.lang.X: bad"]


async def test_an_unknown_connector_is_missing() -> None:
    status, requests = await ask((404, b'{"error_code":404}'), "other/x")
    assert requests == ["GET /connectors/other%2Fx/status"]
    assert status.state == MISSING and not status.running
    assert "not registered" in status.problems()[0]


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (None, r"did not answer \(.+\); is it running\? \(setting connect.url\)"),
        ((500, b"oops"), "answered 500"),
        ((200, b"not json"), "not JSON"),
        ((200, b'{"x": 1}'), "not a status answer"),
    ],
)
async def test_no_usable_answer_is_unavailable(answer: tuple[int, bytes] | None, says: str) -> None:
    with pytest.raises(ConnectUnavailable, match=says):
        await ask(answer)


async def test_no_answer_within_the_request_timeout_is_unavailable() -> None:
    async with FakeConnectRest(lambda method, path: (200, b"")) as rest:
        rest.hang = True
        settings = ConnectSettings(url=rest.url, request_timeout_s=0.1)
        async with aclosing(ConnectClient(settings)) as connect:
            with pytest.raises(ConnectUnavailable, match=r"did not answer \(timed out\)"):
                await connect.status()
        assert rest.requests == ["GET /connectors/searchsync-outbox/status"]


# -- durations and settings ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("7d", timedelta(days=7)),
        ("36h", timedelta(hours=36)),
        ("90m", timedelta(minutes=90)),
        ("45s", timedelta(seconds=45)),
        (" 1D12h ", timedelta(days=1, hours=12)),
    ],
)
def test_parse_duration(text: str, value: timedelta) -> None:
    assert parse_duration(text) == value


@pytest.mark.parametrize("text", ["", "7", "d", "7 d", "-1d", "1.5h", "7w", "1d-2h"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="like 7d"):
        parse_duration(text)


@given(st.integers(1, 10**9))
def test_format_duration_round_trips(seconds: int) -> None:
    value = timedelta(seconds=seconds)
    assert parse_duration(format_duration(value)) == value


def test_retention_defaults_and_the_formula() -> None:
    retention = load_settings({}).retention
    assert retention.tombstone_minimum == timedelta(days=7)
    assert retention.tombstone_formula() == (
        "max_event_delay + retry_window + dlq_replay_window + margin = 1d + 1d + 4d + 1d = 7d"
    )
    env = {"SEARCHSYNC_RETENTION_DLQ_REPLAY_WINDOW": "10d", "SEARCHSYNC_RETENTION_MARGIN": "12h"}
    assert load_settings(env).retention.tombstone_minimum == timedelta(days=12, hours=12)
    tiny = load_settings({"SEARCHSYNC_RETENTION_MIN_TOMBSTONE_AGE": "1s"}).retention
    assert tiny.tombstone_minimum == timedelta(seconds=1)
    assert load_settings({}).redacted()["retention"]["min_outbox_age"] == "1d"


@pytest.mark.parametrize(
    ("variable", "value", "key"),
    [
        ("SEARCHSYNC_RETENTION_MARGIN", "3 days", "retention.margin"),
        ("SEARCHSYNC_RETENTION_MIN_OUTBOX_AGE", "0s", "retention.min_outbox_age"),
        ("SEARCHSYNC_RETENTION_PRUNE_BATCH_SIZE", "0", "retention.prune_batch_size"),
        ("SEARCHSYNC_CONNECT_URL", "ftp://x", "connect.url"),
        ("SEARCHSYNC_CONNECT_CONNECTOR", "a b", "connect.connector"),
    ],
)
def test_bad_retention_and_connect_settings(variable: str, value: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings({variable: value})
    assert info.value.key == key


# -- the commands ----------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("SEARCHSYNC_"):
            monkeypatch.delenv(name)


def engine() -> InMemoryIndex:
    index = InMemoryIndex()
    index.given_index("searchsync_wiki_page_v1", wiki_page.load_mapping())
    index.given_alias("searchsync_wiki_page", "searchsync_wiki_page_v1")
    return index


def purge_services(store: InMemoryIndex) -> Fakes:
    return Fakes(search=search_of(admin=store.admin, physical=store))


def old_tombstone() -> dict[str, Any]:
    at = format_timestamp(datetime.now(UTC) - timedelta(days=30))
    return {"is_deleted": True, "tombstoned_at": at}


def test_tombstones_purge_json(capsys: pytest.CaptureFixture[str]) -> None:
    store = engine()
    store.put("searchsync_wiki_page_v1", "gone", old_tombstone())
    argv = ["tombstones", "purge", "--older-than", "7d", "--execute", "--json"]
    assert main(argv, runtime=purge_services(store)) == ExitCode.OK
    captured = capsys.readouterr()
    [result] = orjson.loads(captured.out)["results"]
    assert result["deleted"] == 1 and result["alias"] == "searchsync_wiki_page"
    assert "purge searchsync_wiki_page: 1 scanned" in captured.err  # progress on stderr
    assert store.indices["searchsync_wiki_page_v1"].docs == {}


def test_tombstones_purge_dry_run_and_refusals(capsys: pytest.CaptureFixture[str]) -> None:
    store = engine()
    store.put("searchsync_wiki_page_v1", "gone", old_tombstone())
    services = purge_services(store)
    assert main(["tombstones", "purge", "--older-than", "7d", "--dry-run"], runtime=services) == 0
    assert "would delete 1 (first: gone)" in capsys.readouterr().out
    assert main(["tombstones", "purge", "--older-than", "6d"], runtime=services) == 2
    assert "shorter than the minimum tombstone age 7d" in capsys.readouterr().err
    assert main(["tombstones", "purge", "--older-than", "7x"], runtime=services) == 2
    argv = ["tombstones", "purge", "--older-than", "7d", "--type", "nope"]
    assert main(argv, runtime=services) == 2
    assert "gone" in store.indices["searchsync_wiki_page_v1"].docs


def prune_services(outbox: FakeOutbox, connect: FakeConnect) -> Fakes:
    return Fakes(tables=tables_of(outbox=outbox), connect=connect)


def test_outbox_prune_json_and_refusals(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCHSYNC_RETENTION_PRUNE_PAUSE_S", "0")
    old = (datetime.now(UTC) - timedelta(days=9)).replace(tzinfo=None)
    outbox = FakeOutbox({1: old, 2: old})
    argv = ["outbox", "prune", "--older-than", "2d", "--execute", "--json"]
    assert main(argv, runtime=prune_services(outbox, FakeConnect("PAUSED"))) == 1
    assert "not RUNNING" in capsys.readouterr().err and len(outbox.rows) == 2
    assert main(argv, runtime=prune_services(outbox, FakeConnect())) == 0
    report = orjson.loads(capsys.readouterr().out)
    assert report["deleted"] == 2 and report["connector"]["running"] is True
    assert outbox.rows == {}
    short = ["outbox", "prune", "--older-than", "1h"]
    assert main(short, runtime=prune_services(outbox, FakeConnect())) == 2
