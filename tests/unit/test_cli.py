"""The CLI: parsing, exit codes and messages, with fakes in place of the services.

Fakes come in through the public seam, ``main(argv, runtime=Fakes(...))``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import KafkaError, KafkaException
from runtime_fakes import Fakes, search_of
from searchsync.cli import main
from searchsync.dlq.record import DLQ_FORMAT, DLQ_FORMAT_HEADER, DlqRecord, encode
from searchsync.errors import ConfigError, DlqBudgetExceeded, ErrorCode, TransientError
from searchsync.exit_codes import ExitCode
from searchsync.projection import wiki_page
from searchsync.resources import KafkaClients
from searchsync.types import Operation

from tests.fakes.kafka_admin import FakeTopics
from tests.fakes.replay_ledger import FakeReplayLedger
from tests.fakes.search_index import InMemoryIndex

EXIT_OK, EXIT_FAILURE, EXIT_CONFIG, EXIT_DLQ_BUDGET = (
    ExitCode.OK,
    ExitCode.FAILURE,
    ExitCode.USAGE,
    ExitCode.DLQ_BUDGET,
)
TOPIC = "outbox.event.wiki_page"


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
        ["loadgen", "--pages", "1", "--updates", "1", "--concurrency", "1"],  # not a command
        ["dlq", "inspect", "--limit", "-3"],
        ["index", "drop", "kb_wiki_page_v1", "--execute", "--yes"],  # --yes is gone
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
        (ConfigError("kafka.extra", "librdkafka settings", "x"), EXIT_CONFIG, "config error: "),
        (DlqBudgetExceeded("too many"), EXIT_DLQ_BUDGET, "dlq budget exceeded: too many"),
        (TransientError("DLQ_READ_TIMEOUT", "slow"), EXIT_FAILURE, "error: DLQ_READ_TIMEOUT"),
        (OSError("refused"), EXIT_FAILURE, "error: OSError: refused"),
        (KeyboardInterrupt(), ExitCode.INTERRUPTED, "interrupted"),
        (
            KafkaException(KafkaError(KafkaError._TRANSPORT, "Failed to get metadata")),
            EXIT_FAILURE,
            "error: Kafka at 127.0.0.1:9092 (setting kafka.bootstrap_servers) is unreachable",
        ),
        (
            TransientError(ErrorCode.MYSQL_UNAVAILABLE, "connect"),
            EXIT_FAILURE,
            "error: MySQL at 127.0.0.1:3306 (settings mysql.host, mysql.port) is unreachable",
        ),
        (
            TransientError(ErrorCode.ES_UNAVAILABLE, "Connection error"),
            EXIT_FAILURE,
            "error: Elasticsearch at http://127.0.0.1:9200 (setting elasticsearch.hosts) is"
            " unreachable",
        ),
    ],
)
def test_exceptions_map_to_exit_codes(
    capsys: pytest.CaptureFixture[str], error: BaseException, code: int, prefix: str
) -> None:
    kafka = FakeTopics(fail_with=error)
    assert main(["dlq", "inspect"], runtime=Fakes(kafka=KafkaClients(admin=kafka.admin))) == code
    assert capsys.readouterr().err.startswith(prefix)


def test_exit_codes_are_the_documented_numbers() -> None:
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4, 5, 130]
    assert [c.name for c in ExitCode] == [
        "OK",
        "FAILURE",
        "USAGE",
        "DLQ_BUDGET",
        "UNHEALTHY",
        "BUSY",
        "INTERRUPTED",
    ]


# --- dlq ---------------------------------------------------------------------------------------


def _record(event_id: str = "evt-1", code: str = "BAD_JSON") -> DlqRecord:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    return DlqRecord(
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
        original_topic=TOPIC,
        original_partition=1,
        original_offset=41,
        original_key=b"p1",
        payload=b"\xff\x00",
        consumer_group="searchsync",
    )


def _kafka_with_dlq(topic: str, *records: DlqRecord) -> tuple[FakeTopics, Fakes]:
    kafka = FakeTopics()
    kafka.topic(topic, [encode(r) for r in records], headers=[(DLQ_FORMAT_HEADER, DLQ_FORMAT)])
    ledger = FakeReplayLedger()
    services = Fakes(
        kafka=KafkaClients(admin=kafka.admin, consumer=kafka.consumer, producer=kafka.producer),
        replay_ledger=ledger,
    )
    return kafka, services


def test_dlq_inspect_reads_the_configured_topic_and_prints_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kafka, services = _kafka_with_dlq("my.dlq", _record("evt-0"), _record("evt-1"))
    monkeypatch.setenv("SEARCHSYNC_KAFKA_DLQ_TOPIC", "my.dlq")
    argv = ["dlq", "inspect", "--limit", "1", "--from-beginning", "--json"]
    assert main(argv, runtime=services) == EXIT_OK
    [row] = _json(capsys)
    assert kafka.admin_configs[0]["bootstrap.servers"] == "127.0.0.1:9092"
    assert row["event_id"] == "evt-0" and row["operation"] == "UPSERT"  # --limit 1, oldest
    assert row["original_key"] == "p1"
    assert row["payload"] == {"base64": "/wA="}  # not UTF-8: shown as base64
    assert row["last_failed_at"] == "2026-01-02T03:04:05+00:00"


def test_dlq_inspect_human_empty(capsys: pytest.CaptureFixture[str]) -> None:
    _, services = _kafka_with_dlq("searchsync.dlq")
    assert main(["dlq", "inspect"], runtime=services) == EXIT_OK
    assert "no dead letters in searchsync.dlq" in capsys.readouterr().out


@pytest.mark.parametrize("as_json", [False, True])
def test_before_the_first_dead_letter_inspect_and_replay_say_so_and_exit_0(
    capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    services = Fakes(
        kafka=KafkaClients(admin=FakeTopics().admin)
    )  # the DLQ topic does not exist yet
    flag = ["--json"] if as_json else []
    assert main(["dlq", "inspect", *flag], runtime=services) == EXIT_OK
    inspected = capsys.readouterr()
    assert main(["dlq", "replay", "--execute", *flag], runtime=services) == EXIT_OK
    replayed = capsys.readouterr()
    assert inspected.err == replayed.err == ""
    if as_json:
        assert orjson.loads(inspected.out) == []
        report = orjson.loads(replayed.out)
        assert (report["scanned"], report["replayed"]) == (0, [])
    else:
        assert inspected.out == "no dead letters in searchsync.dlq\n"
        assert replayed.out == "no dead letters to replay in searchsync.dlq\n"


@pytest.mark.parametrize(
    ("flag", "dry_run"), [([], True), (["--dry-run"], True), (["--execute"], False)]
)
def test_dlq_replay_plans_by_default_and_replays_with_execute(
    capsys: pytest.CaptureFixture[str], flag: list[str], dry_run: bool
) -> None:
    records = [_record("evt-0"), _record("evt-1", code="OTHER"), _record("evt-1")]
    records += [_record("evt-1", code="OTHER")]
    kafka, services = _kafka_with_dlq("searchsync.dlq", *records)
    argv = ["dlq", "replay", "--error-code", "BAD_JSON", "--event-id", "evt-1", "--limit", "1"]
    assert main(argv + flag, runtime=services) == EXIT_OK
    captured = capsys.readouterr()
    verb = "would replay" if dry_run else "replayed"
    assert f"{verb} 1 of 3 dead letters" in captured.out
    assert "(2 skipped by filters, 0 replayed" in captured.out
    assert ("add --execute to act" in captured.err) is dry_run
    produced = [p for producer in kafka.producers for p in producer.produced]
    assert [(p.topic, p.partition) for p in produced] == ([] if dry_run else [(TOPIC, 1)])
    assert main([*argv, *flag, "--json"], runtime=services) == EXIT_OK
    assert _json(capsys)["dry_run"] is dry_run


def test_dlq_replay_twice_says_nothing_to_do_unless_again(
    capsys: pytest.CaptureFixture[str],
) -> None:
    kafka, services = _kafka_with_dlq("searchsync.dlq", _record("evt-0"), _record("evt-1"))
    argv = ["dlq", "replay", "--code", "BAD_JSON", "--execute"]
    assert main(argv, runtime=services) == EXIT_OK
    assert "replayed 2 of 2" in capsys.readouterr().out
    assert main(argv, runtime=services) == EXIT_OK
    second = capsys.readouterr().out
    assert second.startswith("nothing to replay: the 2 dead letter(s) this selection picks")
    assert "--again" in second
    assert main([*argv, "--json"], runtime=services) == EXIT_OK
    report = _json(capsys)
    assert report["nothing_new"] is True and report["replayed"] == []
    assert report["selection"] == {"error_code": "BAD_JSON"}
    assert [e["replayed"] for e in report["already_replayed"]] == [True, True]
    assert main([*argv, "--again"], runtime=services) == EXIT_OK
    assert "replayed 2 of 2" in capsys.readouterr().out
    assert sum(len(p.produced) for p in kafka.producers) == 4


def test_dlq_inspect_filters_and_marks_replayed(capsys: pytest.CaptureFixture[str]) -> None:
    records = [_record("evt-0"), _record("evt-1", code="OTHER"), _record("evt-2")]
    _, services = _kafka_with_dlq("searchsync.dlq", *records)
    argv = ["dlq", "replay", "--event-id", "evt-2", "--execute"]
    assert main(argv, runtime=services) == EXIT_OK
    capsys.readouterr()
    argv = ["dlq", "inspect", "--code", "BAD_JSON", "--type", "wiki_page", "--id", "p1"]
    assert main([*argv, "--since", "2026-01-02T03:04:05Z", "--json"], runtime=services) == 0
    rows = _json(capsys)
    assert [(r["event_id"], r["replayed"]) for r in rows] == [("evt-0", False), ("evt-2", True)]
    assert rows[1]["replays"][0]["selection"] == {"event_id": "evt-2"}
    assert rows[1]["dlq_offset"] == 2 and rows[1]["kafka_timestamp"] is not None
    assert main([*argv, "--until", "2026-01-02T03:04:05Z", "--json"], runtime=services) == 0
    assert _json(capsys) == []
    assert main(["dlq", "inspect", "--event-id", "evt-2"], runtime=services) == EXIT_OK
    assert "[replayed 1x, last " in capsys.readouterr().out


def test_dlq_time_filters_need_a_zone(capsys: pytest.CaptureFixture[str]) -> None:
    _, services = _kafka_with_dlq("searchsync.dlq", _record())
    assert main(["dlq", "inspect", "--since", "2026-01-02"], runtime=services) == EXIT_CONFIG
    assert "no time zone" in capsys.readouterr().err


@pytest.mark.parametrize("as_json", [False, True])
def test_dlq_summary(capsys: pytest.CaptureFixture[str], as_json: bool) -> None:
    records = [_record("evt-0"), _record("evt-1", code="OTHER"), _record("evt-2")]
    _, services = _kafka_with_dlq("searchsync.dlq", *records)
    assert main(["dlq", "replay", "--code", "OTHER", "--execute"], runtime=services) == EXIT_OK
    capsys.readouterr()
    assert main(["dlq", "summary", *(["--json"] if as_json else [])], runtime=services) == 0
    if as_json:
        doc = _json(capsys)
        assert doc["total"] == 3 and doc["by_code"] == {"BAD_JSON": 2, "OTHER": 1}
        assert doc["by_type"] == {"wiki_page": 3} and doc["replayed"] == 1
        assert doc["oldest_failed_at"] == "2026-01-02T03:04:05+00:00"
        [replayed] = doc["replays"]
        assert replayed["event_id"] == "evt-1" and replayed["outcome"] == "pending"
        assert replayed["dlq_position"] == "searchsync.dlq/0/1"
    else:
        text = capsys.readouterr().out
        assert "3 dead letters in searchsync.dlq" in text
        assert "by error code: BAD_JSON 2, OTHER 1" in text
        assert "1 replays recorded (pending 1)" in text


@pytest.mark.parametrize("as_json", [False, True])
def test_dlq_summary_before_the_first_dead_letter(
    capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    services = Fakes(
        kafka=KafkaClients(admin=FakeTopics().admin)
    )  # no topic: the ledger is never opened
    assert main(["dlq", "summary", *(["--json"] if as_json else [])], runtime=services) == 0
    if as_json:
        doc = _json(capsys)
        assert doc["exists"] is False and doc["total"] == 0
    else:
        assert capsys.readouterr().out == "no dead letters in searchsync.dlq\n"


# --- index -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dry_run", [True, False])
def test_index_init_uses_alias_and_projector_mapping(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], dry_run: bool
) -> None:
    es = InMemoryIndex()
    monkeypatch.setenv("SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX", "kb")
    argv = ["index", "init", "--json"] + (["--dry-run"] if dry_run else [])
    services = Fakes(search=search_of(admin=es.admin))
    assert main(argv, runtime=services) == ExitCode.OK
    out = _json(capsys)
    assert out["index"] == "kb_wiki_page_v1" and out["alias"] == "kb_wiki_page"
    assert out["dry_run"] is dry_run
    if dry_run:
        assert out["action"] == "would_create" and not es.has("kb_wiki_page_v1")
    else:
        assert out["action"] == "created"
        assert es.alias_target("kb_wiki_page") == "kb_wiki_page_v1"
        [info] = asyncio.run(es.admin.list_indices("kb_wiki_page"))
        assert info.schema_version == wiki_page.SCHEMA_VERSION and info.is_write_index
    assert [r.closed for r in services.made] == [1]  # the command closed what it used


def test_index_init_unknown_type(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", "init", "--type", "nope"]) == EXIT_CONFIG
    assert "unknown aggregate type 'nope'" in capsys.readouterr().err


# --- offsets -----------------------------------------------------------------------------------


@pytest.fixture
def kafka() -> FakeTopics:
    fakes = FakeTopics()
    fakes.topic(TOPIC, [b""] * 10, [b""] * 4)
    fakes.topic("other", [b""])
    fakes.low[(TOPIC, 0)] = 2
    fakes.commits[("searchsync", (TOPIC, 0))] = 5
    return fakes


def _main(kafka: FakeTopics, argv: list[str]) -> int:
    return main(argv, runtime=Fakes(kafka=KafkaClients(admin=kafka.admin)))


def test_offsets_show(kafka: FakeTopics, capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(kafka, ["offsets", "show", "--json"]) == EXIT_OK
    out = _json(capsys)
    assert out["group"] == "searchsync"
    assert [(p["partition"], p["committed"], p["high"], p["lag"]) for p in out["partitions"]] == [
        (0, 5, 10, 5),
        (1, None, 4, 4),  # never committed: lag from where auto_offset_reset=earliest starts
    ]
    assert out["total_lag"] == 9


def test_offsets_reset_dry_run_prints_plan_and_changes_nothing(
    kafka: FakeTopics, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _main(kafka, ["offsets", "reset", "--to", "earliest", "--dry-run"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "would move outbox.event.wiki_page/0: 5 -> 2" in out
    assert "would move outbox.event.wiki_page/1: - -> 0" in out
    assert kafka.altered == []
    assert _main(kafka, ["offsets", "reset", "--to", "earliest"]) == EXIT_OK  # no --execute
    captured = capsys.readouterr()
    assert "would move outbox.event.wiki_page/0: 5 -> 2" in captured.out
    assert "add --execute to act" in captured.err
    assert kafka.altered == []


def test_offsets_reset_applies_when_group_is_idle(
    kafka: FakeTopics, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        _main(kafka, ["offsets", "reset", "--to", "7", "--partition", "0", "--execute", "--json"])
        == EXIT_OK
    )
    out = _json(capsys)
    assert out["plan"] == [
        {"topic": "outbox.event.wiki_page", "partition": 0, "current": 5, "target": 7}
    ]
    assert kafka.altered == [("searchsync", {(TOPIC, 0): 7})]
    assert kafka.committed_by("searchsync") == {(TOPIC, 0): 7}


def test_offsets_reset_refuses_an_active_group(
    kafka: FakeTopics, capsys: pytest.CaptureFixture[str]
) -> None:
    kafka.members["searchsync"] = ["c1@/10.0.0.1"]
    assert _main(kafka, ["offsets", "reset", "--to", "latest", "--execute"]) == EXIT_FAILURE
    err = capsys.readouterr().err
    assert "has 1 active member(s) (c1@/10.0.0.1)" in err and "stop every `searchsync run`" in err
    assert kafka.altered == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--to", "11", "--partition", "0"], "outside outbox.event.wiki_page/0's range [2, 10]"),
        (["--to", "earliest", "--partition", "9"], "no such partition"),
        (["--to", "earliest", "--topic", "nope"], "no such partition: topic nope"),
    ],
)
def test_offsets_reset_bad_targets(
    kafka: FakeTopics, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert _main(kafka, ["offsets", "reset", *argv]) == EXIT_CONFIG
    assert message in capsys.readouterr().err
    assert kafka.altered == []


def _plan(capsys: pytest.CaptureFixture[str]) -> list[tuple[str, int, int | None, int]]:
    doc = _json(capsys)
    return [(s["topic"], s["partition"], s["current"], s["target"]) for s in doc["plan"]]


def test_offsets_reset_to_a_time(kafka: FakeTopics, capsys: pytest.CaptureFixture[str]) -> None:
    # the fakes stamp offset o of partition p at 10*o + p ms
    argv = ["offsets", "reset", "--to", "1970-01-01T00:00:00.050Z", "--execute", "--json"]
    assert _main(kafka, argv) == EXIT_OK
    assert _plan(capsys) == [(TOPIC, 0, 5, 5), (TOPIC, 1, None, 4)]  # p1: past its last message
    assert kafka.committed_by("searchsync") == {(TOPIC, 0): 5, (TOPIC, 1): 4}
    argv = ["offsets", "reset", "--to", "2026-11-30T12:00:00Z", "--dry-run", "--json"]
    assert _main(kafka, argv) == EXIT_OK
    assert _plan(capsys) == [(TOPIC, 0, 5, 10), (TOPIC, 1, 4, 4)]  # later than everything: end
    argv = [
        *("offsets", "reset", "--to", "1970-01-01T00:00:00Z", "--partition", "0"),
        *("--execute", "--json"),
    ]
    assert _main(kafka, argv) == EXIT_OK
    assert _plan(capsys) == [(TOPIC, 0, 5, 2)]  # before the retained messages: the low mark


def test_offsets_reset_one_partition_to_an_offset(
    kafka: FakeTopics, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["offsets", "reset", "--partition", "1", "--offset", "3", "--execute", "--json"]
    assert _main(kafka, argv) == EXIT_OK
    doc = _json(capsys)
    assert doc["target"] == f"{TOPIC}/1@3" and doc["plan"][0]["target"] == 3
    assert kafka.altered == [("searchsync", {(TOPIC, 1): 3})]
    monkeypatch.setenv("SEARCHSYNC_KAFKA_TOPICS", f"{TOPIC},other")
    assert _main(kafka, argv) == EXIT_CONFIG
    assert "the group reads 2 topics (outbox.event.wiki_page, other): name one with --topic" in (
        capsys.readouterr().err
    )
    assert _main(kafka, [*argv, "--topic", TOPIC]) == EXIT_OK
    assert len(kafka.altered) == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--offset", "3"], "--offset N needs --partition P"),
        (["--to", "2026-11-30T12:00:00"], "no time zone"),
        (["--to", "1", "--offset", "1", "--partition", "0"], "not allowed with argument"),
        (["--partition", "0", "--offset", "99"], "outside outbox.event.wiki_page/0's range"),
    ],
)
def test_offsets_reset_bad_one_partition_or_time(
    kafka: FakeTopics, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert _main(kafka, ["offsets", "reset", *argv]) == EXIT_CONFIG
    assert message in capsys.readouterr().err
    assert kafka.altered == []


@pytest.mark.parametrize(
    "argv", [["--to", "2026-11-30T12:00:00Z"], ["--partition", "0", "--offset", "3"]]
)
def test_offsets_reset_to_a_time_or_one_offset_still_refuses_an_active_group(
    kafka: FakeTopics, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    kafka.members["searchsync"] = ["c1@/10.0.0.1"]
    assert _main(kafka, ["offsets", "reset", *argv, "--execute"]) == EXIT_FAILURE
    assert "has 1 active member(s)" in capsys.readouterr().err
    assert kafka.altered == []


def test_run_without_the_app_module_is_an_operational_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "searchsync.app", None)  # makes the import fail
    assert main(["run"]) == EXIT_FAILURE
    assert "consumer is not available" in capsys.readouterr().err


def test_run_stops_on_sigterm_and_returns_the_consumer_code() -> None:
    import asyncio
    import logging
    import signal

    seen: dict[str, Any] = {}

    async def run_consumer(runtime: Any, stop: asyncio.Event) -> int:
        assert not stop.is_set()
        seen["types"] = runtime.registry.types()
        os.kill(os.getpid(), signal.SIGTERM)  # handled by the CLI: sets `stop`, nothing dies
        await asyncio.wait_for(stop.wait(), 5)
        return EXIT_DLQ_BUDGET

    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        assert main(["run"], runtime=Fakes(consumer=run_consumer)) == EXIT_DLQ_BUDGET
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    assert "wiki_page" in seen["types"]  # the registry of the runtime the consumer runs on
