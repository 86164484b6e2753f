"""The CLI: parsing, exit codes and messages, with fakes in place of the services."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from consumer import cli
from consumer.cli import EXIT_CONFIG, EXIT_DLQ_BUDGET, EXIT_FAILURE, EXIT_OK, main
from consumer.errors import ConfigError, DlqBudgetExceeded, ErrorCode, TransientError
from consumer.search import admin as indexadmin
from consumer.stream import dlq
from consumer.types import Operation


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("SEARCHSYNC_"):
            monkeypatch.delenv(name)
    yield


def _json(capsys: pytest.CaptureFixture[str]) -> Any:
    return orjson.loads(capsys.readouterr().out)


# --- parsing and config ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["bogus"],
        ["index"],
        ["loadgen", "--pages", "0", "--updates", "1", "--concurrency", "1"],
        ["loadgen", "--pages", "1", "--updates", "1"],
        [
            "loadgen",
            "--pages",
            "1",
            "--updates",
            "1",
            "--concurrency",
            "1",
            "--delete-ratio",
            "0.9",
        ],
        ["dlq", "inspect", "--limit", "-3"],
        ["offsets", "reset"],
        ["offsets", "reset", "--to", "yesterday"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == EXIT_CONFIG
    assert "usage:" in capsys.readouterr().err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == EXIT_OK
    assert "exit codes" in capsys.readouterr().out


def test_config_check_json_redacts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SEARCHSYNC_MYSQL_PASSWORD", "hunter2")
    assert main(["config", "check", "--json"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "hunter2" not in out
    assert orjson.loads(out)["mysql"]["password"] == "***"


def test_config_check_human(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check"]) == EXIT_OK
    out = capsys.readouterr().out
    assert 'kafka.group_id = "searchsync"' in out and out.rstrip().endswith("config ok")


def test_bad_env_value_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SEARCHSYNC_KAFKA_POLL_BATCH_SIZE", "many")
    assert main(["config", "check"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert err.startswith("config error: kafka.poll_batch_size: expected an integer in 1..100000")


def test_config_file_from_flag_and_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.toml"
    good.write_text('[kafka]\ngroup_id = "from-file"\n')
    assert main(["config", "check", "--json", "--config", str(good)]) == EXIT_OK
    assert _json(capsys)["kafka"]["group_id"] == "from-file"
    assert main(["--config", str(good), "config", "check", "--json"]) == EXIT_OK
    assert _json(capsys)["kafka"]["group_id"] == "from-file"
    bad = tmp_path / "bad.toml"
    bad.write_text("[kafka\n")
    monkeypatch.setenv("SEARCHSYNC_CONFIG", str(bad))
    assert main(["config", "check"]) == EXIT_CONFIG
    assert capsys.readouterr().err.startswith("config error: config file: expected valid TOML")
    assert main(["config", "check", "--config", str(tmp_path / "missing.toml")]) == EXIT_CONFIG


# --- error mapping -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "code", "prefix"),
    [
        (ConfigError("dlq topic", "an existing Kafka topic", "t"), EXIT_CONFIG, "config error: "),
        (DlqBudgetExceeded("too many"), EXIT_DLQ_BUDGET, "dlq budget exceeded: too many"),
        (
            TransientError(ErrorCode.DLQ_READ_TIMEOUT, "slow"),
            EXIT_FAILURE,
            "error: DLQ_READ_TIMEOUT",
        ),
        (OSError("refused"), EXIT_FAILURE, "error: OSError: refused"),
    ],
)
def test_exceptions_map_to_exit_codes(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    error: Exception,
    code: int,
    prefix: str,
) -> None:
    def boom(*_: Any, **__: Any) -> Any:
        raise error

    monkeypatch.setattr(dlq, "inspect", boom)
    assert main(["dlq", "inspect"]) == code
    assert capsys.readouterr().err.startswith(prefix)


# --- dlq ---------------------------------------------------------------------------------------


def _record(event_id: str = "evt-1", code: str = "BAD_JSON") -> dlq.DlqRecord:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    return dlq.DlqRecord(
        event_id=event_id,
        aggregate_type="wiki_page",
        aggregate_id="p1",
        source_revision=3,
        operation=Operation.UPSERT,
        first_failed_at=at,
        last_failed_at=at,
        attempts=2,
        last_error_code=code,
        last_error_message="broken",
        projection_schema_version=None,
        original_topic="outbox.event.wiki_page",
        original_partition=1,
        original_offset=41,
        original_key=b"p1",
        payload=b"\xff\x00",
        consumer_group="searchsync",
    )


def test_dlq_inspect_passes_settings_and_prints_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def fake(*args: Any, **kwargs: Any) -> list[dlq.DlqRecord]:
        calls.append((args, kwargs))
        return [_record()]

    monkeypatch.setattr(dlq, "inspect", fake)
    monkeypatch.setenv("SEARCHSYNC_KAFKA_DLQ_TOPIC", "my.dlq")
    assert main(["dlq", "inspect", "--limit", "5", "--from-beginning", "--json"]) == EXIT_OK
    [row] = _json(capsys)
    assert calls[0][0] == ("127.0.0.1:9092", "my.dlq")
    assert calls[0][1]["limit"] == 5 and calls[0][1]["from_beginning"] is True
    assert row["event_id"] == "evt-1" and row["operation"] == "UPSERT"
    assert row["original_key"] == "p1"
    assert row["payload"] == {"base64": "/wA="}  # not UTF-8: shown as base64
    assert row["last_failed_at"] == "2026-01-02T03:04:05+00:00"


def test_dlq_inspect_human_empty(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(dlq, "inspect", lambda *a, **k: [])
    assert main(["dlq", "inspect"]) == EXIT_OK
    assert "no dead letters in searchsync.dlq" in capsys.readouterr().out


@pytest.mark.parametrize("dry_run", [True, False])
def test_dlq_replay_reports_what_it_did(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], dry_run: bool
) -> None:
    seen: dict[str, Any] = {}

    def fake(bootstrap: str, topic: str, **kwargs: Any) -> dlq.ReplayReport:
        seen.update(kwargs, topic=topic)
        return dlq.ReplayReport(
            dry_run=kwargs["dry_run"], scanned=3, replayed=(_record(),), skipped=2
        )

    monkeypatch.setattr(dlq, "replay", fake)
    argv = ["dlq", "replay", "--error-code", "BAD_JSON", "--event-id", "evt-1", "--limit", "1"]
    assert main(argv + (["--dry-run"] if dry_run else [])) == EXIT_OK
    out = capsys.readouterr().out
    verb = "would replay" if dry_run else "replayed"
    assert f"{verb} 1 of 3 dead letters" in out and "(2 skipped by filters)" in out
    assert seen["dry_run"] is dry_run and seen["error_code"] == "BAD_JSON"
    assert seen["event_id"] == "evt-1" and seen["limit"] == 1


# --- index -------------------------------------------------------------------------------------


class _FakeEs:
    closed = False

    async def close(self) -> None:
        self.closed = True


def test_index_init_uses_alias_and_projector_mapping(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    es = _FakeEs()
    seen: dict[str, Any] = {}

    async def fake_init(client: Any, alias: str, mapping: Any, *, dry_run: bool) -> Any:
        seen.update(client=client, alias=alias, mapping=mapping, dry_run=dry_run)
        return indexadmin.InitResult(alias, f"{alias}_v1", indexadmin.InitAction.WOULD_CREATE)

    monkeypatch.setattr(cli, "_es_client", lambda settings: es)
    monkeypatch.setattr(indexadmin, "init_index", fake_init)
    monkeypatch.setenv("SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX", "kb")
    assert main(["index", "init", "--dry-run", "--json"]) == EXIT_OK
    out = _json(capsys)
    assert seen["alias"] == "kb_wiki_page" and seen["dry_run"] is True
    assert "properties" in seen["mapping"]["mappings"]
    assert out["action"] == "would_create" and out["index"] == "kb_wiki_page_v1"
    assert es.closed


def test_index_init_unknown_type(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", "init", "--type", "nope"]) == EXIT_CONFIG
    assert "unknown aggregate type 'nope'" in capsys.readouterr().err


# --- offsets -----------------------------------------------------------------------------------


class _FakeConsumer:
    def __init__(self, committed: dict[int, int], marks: dict[int, tuple[int, int]]) -> None:
        self._committed = committed
        self._marks = marks
        self.closed = False

    def list_topics(self, topic: str | None = None, timeout: float = 0) -> Any:
        parts = {p: None for p in self._marks}
        return SimpleNamespace(
            topics={"outbox.event.wiki_page": SimpleNamespace(partitions=parts), "other": None}
        )

    def committed(self, wanted: list[Any], timeout: float = 0) -> list[Any]:
        return [
            SimpleNamespace(
                topic=tp.topic,
                partition=tp.partition,
                offset=self._committed.get(tp.partition, -1001),
            )
            for tp in wanted
        ]

    def get_watermark_offsets(self, tp: Any, timeout: float = 0) -> tuple[int, int]:
        return self._marks[tp.partition]

    def close(self) -> None:
        self.closed = True


class _Future:
    def __init__(self, value: Any) -> None:
        self._value = value

    def result(self) -> Any:
        return self._value


class _FakeAdmin:
    def __init__(self, members: list[Any], state: str = "EMPTY") -> None:
        self._members = members
        self._state = state
        self.altered: list[Any] = []

    def describe_consumer_groups(self, groups: list[str], **_: Any) -> dict[str, _Future]:
        state = SimpleNamespace(name=self._state)
        return {groups[0]: _Future(SimpleNamespace(members=self._members, state=state))}

    def alter_consumer_group_offsets(self, requests: list[Any], **_: Any) -> dict[str, _Future]:
        self.altered.extend(requests)
        partitions = [
            SimpleNamespace(topic=tp.topic, partition=tp.partition, offset=tp.offset, error=None)
            for tp in requests[0].topic_partitions
        ]
        return {requests[0].group_id: _Future(SimpleNamespace(topic_partitions=partitions))}


@pytest.fixture
def kafka(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    fakes = SimpleNamespace(
        consumer=_FakeConsumer({0: 5}, {0: (2, 10), 1: (0, 4)}), admin=_FakeAdmin([])
    )
    monkeypatch.setattr(cli, "_group_consumer", lambda settings: fakes.consumer)
    monkeypatch.setattr(cli, "_admin", lambda settings: fakes.admin)
    return fakes


def test_offsets_show(kafka: SimpleNamespace, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["offsets", "show", "--json"]) == EXIT_OK
    out = _json(capsys)
    assert out["group"] == "searchsync"
    assert [(p["partition"], p["committed"], p["high"], p["lag"]) for p in out["partitions"]] == [
        (0, 5, 10, 5),
        (1, None, 4, 4),  # never committed: lag from where auto_offset_reset=earliest starts
    ]
    assert out["total_lag"] == 9
    assert kafka.consumer.closed


def test_offsets_reset_dry_run_prints_plan_and_changes_nothing(
    kafka: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["offsets", "reset", "--to", "earliest", "--dry-run"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "would move outbox.event.wiki_page/0: 5 -> 2" in out
    assert "would move outbox.event.wiki_page/1: - -> 0" in out
    assert kafka.admin.altered == []


def test_offsets_reset_applies_when_group_is_idle(
    kafka: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["offsets", "reset", "--to", "7", "--partition", "0", "--json"]) == EXIT_OK
    out = _json(capsys)
    assert out["plan"] == [
        {"topic": "outbox.event.wiki_page", "partition": 0, "current": 5, "target": 7}
    ]
    [request] = kafka.admin.altered
    assert request.group_id == "searchsync"
    assert [(tp.partition, tp.offset) for tp in request.topic_partitions] == [(0, 7)]


def test_offsets_reset_refuses_an_active_group(
    kafka: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    kafka.admin = _FakeAdmin([SimpleNamespace(client_id="c1", host="/10.0.0.1")], "STABLE")
    assert main(["offsets", "reset", "--to", "latest"]) == EXIT_FAILURE
    err = capsys.readouterr().err
    assert "has 1 active member(s) (c1@/10.0.0.1)" in err and "stop every `searchsync run`" in err
    assert kafka.admin.altered == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--to", "11", "--partition", "0"], "outside outbox.event.wiki_page/0's range [2, 10]"),
        (["--to", "earliest", "--partition", "9"], "no such partition"),
        (["--to", "earliest", "--topic", "nope"], "no such partition: topic nope"),
    ],
)
def test_offsets_reset_bad_targets(
    kafka: SimpleNamespace, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["offsets", "reset", *argv]) == EXIT_CONFIG
    assert message in capsys.readouterr().err
    assert kafka.admin.altered == []


# --- loadgen progress --------------------------------------------------------------------------


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_tty_redraws_one_line() -> None:
    now = [0.0]
    stream = _Tty()
    progress = cli.Progress(stream, clock=lambda: now[0], width=10)
    for done in range(1, 11):
        now[0] += 1.0
        progress(done, 10)
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.endswith("10/10 100.0%\n")
    assert text.count("\r") == 10
    assert "[#####-----] 5/10" in text


def test_progress_elsewhere_prints_periodic_lines() -> None:
    now = [0.0]
    stream = io.StringIO()
    progress = cli.Progress(stream, clock=lambda: now[0], interval_s=5.0)
    for done in range(1, 101):
        now[0] += 0.1  # 10 s in all: the first call, one at 5 s, one at 10 s and the last
        progress(done, 100)
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert lines[0] == "loadgen: 1/100 (1.0%)" and lines[-1] == "loadgen: 100/100 (100.0%)"
    assert 3 <= len(lines) <= 4


def test_run_without_the_app_module_is_an_operational_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "consumer.app", None)  # makes the import fail
    assert main(["run"]) == EXIT_FAILURE
    assert "consumer is not available" in capsys.readouterr().err


def test_run_stops_on_sigterm_and_returns_the_consumer_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio
    import logging
    import signal
    import sys
    import types

    async def run_consumer(settings: Any, *, stop: asyncio.Event | None = None) -> int:
        assert stop is not None and not stop.is_set()
        os.kill(os.getpid(), signal.SIGTERM)  # handled by the CLI: sets `stop`, nothing dies
        await asyncio.wait_for(stop.wait(), 5)
        return EXIT_DLQ_BUDGET

    fake = types.ModuleType("consumer.app")
    fake.run_consumer = run_consumer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "consumer.app", fake)
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        assert main(["run"]) == EXIT_DLQ_BUDGET
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
