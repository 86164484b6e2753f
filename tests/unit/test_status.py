"""`searchsync status` through its public seams: fakes for Kafka, the index and the outbox."""

from __future__ import annotations

import asyncio
import http.server
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from runtime_fakes import Fakes, search_of, tables_of
from searchsync.cli import main
from searchsync.exit_codes import ExitCode
from searchsync.kafka.connect import ConnectorStatus, TaskStatus
from searchsync.ops.repair.generations import BucketState, Epoch, WheelSnapshot
from searchsync.ops.status import Section, gather, in_thread
from searchsync.projection import wiki_page
from searchsync.resources import KafkaClients

from tests.fakes.kafka_admin import FakeTopics
from tests.fakes.relay_store import FakeRelayStore
from tests.fakes.search_index import InMemoryIndex
from tests.fakes.wheel_state import FakeWheelState

TOPIC = "outbox.event.wiki_page"
ALIAS = "searchsync_wiki_page"


class _Outbox:
    async def stats(self) -> tuple[int, datetime | None]:
        return 7, datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


class _Connector:
    def __init__(self, state: str) -> None:
        self.state = state

    async def status(self, name: str | None = None) -> ConnectorStatus:
        task = TaskStatus(0, self.state, "w1", "boom" if self.state == "FAILED" else None)
        return ConnectorStatus(name or "searchsync-outbox", "RUNNING", "w1", (task,))


class _Health(http.server.BaseHTTPRequestHandler):
    answer: tuple[int, dict[str, Any]] = (200, {"ready": True, "reasons": []})

    def do_GET(self) -> None:
        code, body = self.answer
        data = orjson.dumps(body)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def health() -> Iterator[tuple[str, type[_Health]]]:
    handler = type("Handler", (_Health,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def wheel_state(wheels: dict[str, WheelSnapshot]) -> FakeWheelState:
    """A wheel state store that holds `wheels`."""
    store = FakeWheelState()
    for t, w in wheels.items():
        if w.epoch is not None:
            store.epochs[t] = [w.epoch]
            store.states[(t, w.epoch.epoch)] = dict(w.buckets)
    return store


def _system(
    *,
    members: list[str],
    schema: int = wiki_page.SCHEMA_VERSION,
    connector: str = "RUNNING",
    wheels: dict[str, WheelSnapshot] | None = None,
    read_alias: bool = True,
    relay: FakeRelayStore | None = None,
) -> Fakes:
    kafka = FakeTopics()
    kafka.topic(TOPIC, [b""] * 10, [b""] * 4)
    kafka.commits[("searchsync", (TOPIC, 0))] = 10
    kafka.commits[("searchsync", (TOPIC, 1))] = 4
    kafka.members["searchsync"] = members
    es = InMemoryIndex()
    asyncio.run(
        es.admin.create_index(
            f"{ALIAS}_v1",
            wiki_page.load_mapping(),
            meta={"projection_schema_version": schema},
            alias=ALIAS,
        )
    )
    if not read_alias:  # an install from before the read alias
        es.aliases.pop(f"{ALIAS}_live")

    if wheels is None:
        epoch = Epoch("wiki_page", 1, 2, 1)
        now = datetime.now(UTC)
        wheels = {"wiki_page": WheelSnapshot("wiki_page", epoch, fresh_buckets(2, now))}
    return Fakes(
        search=search_of(admin=es.admin),
        kafka=KafkaClients(admin=kafka.admin, consumer=kafka.consumer),
        tables=tables_of(
            outbox=_Outbox(),
            wheel_state=wheel_state(wheels),
            relay=relay if relay is not None else FakeRelayStore(),
        ),
        connect=_Connector(connector),
    )


def fresh_buckets(m: int, at: datetime) -> dict[int, BucketState]:
    return {b: BucketState(b, generation=1, last_complete_at=at) for b in range(m)}


def _status(services: Fakes, endpoint: str, capsys: pytest.CaptureFixture[str]) -> Any:
    code = main(["status", "--json", "--consumer", endpoint], runtime=services)
    return code, orjson.loads(capsys.readouterr().out)


def test_a_healthy_system_exits_0_and_shows_every_section(
    health: tuple[str, type[_Health]], capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _status(_system(members=["c1"]), health[0], capsys)
    assert code == ExitCode.OK and report["healthy"] is True and report["problems"] == []
    sections = report["sections"]
    assert set(sections) == {
        "group",
        "connector",
        "aliases",
        "consumers",
        "outbox",
        "dlq",
        "repair",
    }
    assert sections["connector"]["running"] is True
    assert sections["group"]["lag"] == 0 and sections["group"]["members"] == ["c1"]
    [alias] = sections["aliases"]["aliases"]
    assert alias["write_index"] == f"{ALIAS}_v1"
    assert alias["schema_version"] == wiki_page.SCHEMA_VERSION
    assert (alias["read_alias"], alias["read_indices"]) == (f"{ALIAS}_live", [f"{ALIAS}_v1"])
    assert sections["outbox"]["rows"] == 7
    assert sections["dlq"]["total"] == 0  # the DLQ topic does not exist yet: no dead letters
    assert sections["consumers"]["consumers"][0]["ready"] is True
    [wheel] = sections["repair"]["wheels"]
    assert wheel["buckets_complete"] == 2 and wheel["epoch"] == 1
    assert report["warnings"] == []


def test_a_missing_read_alias_is_a_problem(
    health: tuple[str, type[_Health]], capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _status(_system(members=["c1"], read_alias=False), health[0], capsys)
    assert code == ExitCode.UNHEALTHY
    [problem] = report["problems"]
    assert f"read alias {ALIAS}_live points at nothing" in problem and "index init" in problem


def test_no_running_consumer_is_a_problem_with_the_reason(
    health: tuple[str, type[_Health]], capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _status(_system(members=[]), health[0], capsys)
    assert code == ExitCode.UNHEALTHY
    assert any("no consumer is running" in p for p in report["problems"])


def test_a_fenced_consumer_and_a_schema_mismatch_are_problems(
    health: tuple[str, type[_Health]], capsys: pytest.CaptureFixture[str]
) -> None:
    url, handler = health
    handler.answer = (503, {"ready": False, "reasons": ["fenced: searchsync_wiki_page"]})
    code, report = _status(_system(members=["c1"], schema=99), url, capsys)
    assert code == ExitCode.UNHEALTHY
    problems = " | ".join(report["problems"])
    assert "fenced: searchsync_wiki_page" in problems
    assert "schema 99" in problems


def test_more_members_than_partitions_is_a_warning_not_a_failure(
    health: tuple[str, type[_Health]], capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _status(_system(members=["c1", "c2", "c3"]), health[0], capsys)
    assert code == ExitCode.OK
    assert any("3 members but 2 partitions" in w for w in report["warnings"])


def test_an_unreachable_service_is_reported_not_raised(capsys: pytest.CaptureFixture[str]) -> None:
    async def broken() -> Section:
        raise ConnectionRefusedError("connection refused")

    async def fine() -> Section:
        return Section("fine", {"x": 1})

    report = asyncio.run(gather([("kafka", broken), ("fine", fine)]))
    assert not report.healthy
    assert report.problems == ["kafka: could not check: connection refused"]
    assert [s.name for s in report.sections] == ["kafka", "fine"]


def test_the_human_report_names_problems_first(
    health: tuple[str, type[_Health]], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["status", "--consumer", health[0]], runtime=_system(members=[]))
    lines = capsys.readouterr().out.splitlines()
    assert code == ExitCode.UNHEALTHY
    assert lines[0] == "searchsync status: UNHEALTHY"
    assert lines[1].startswith("  problem: group: no consumer is running")


def test_a_failed_connector_task_is_a_problem_with_its_trace(
    health: tuple[str, type[_Health]], capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _status(_system(members=["c1"], connector="FAILED"), health[0], capsys)
    assert code == ExitCode.UNHEALTHY
    assert "connector: task 0 of searchsync-outbox is FAILED: boom" in report["problems"]


def test_a_service_that_does_not_answer_is_one_line_naming_every_section_that_asked() -> None:
    async def hangs() -> Section:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def refused() -> Section:
        raise ConnectionRefusedError("mysql refused")

    async def fine() -> Section:
        return Section("fine", {"x": 1})

    asks = {"group": "Kafka at k:1", "dlq": "Kafka at k:1", "outbox": "MySQL at m:1"}
    probes = [("group", hangs), ("fine", fine), ("outbox", refused), ("dlq", hangs)]
    report = asyncio.run(gather(probes, timeout_s=0.05, asks=asks, explain=lambda e: f"away: {e}"))
    assert report.problems == [
        "group, dlq: could not check: no answer within 0.05 s from Kafka at k:1",
        "outbox: could not check: away: mysql refused",
    ]
    assert [s.name for s in report.sections] == ["group", "fine", "outbox", "dlq"]


def test_a_probe_in_its_own_thread_is_left_behind_at_its_timeout() -> None:
    import threading

    release = threading.Event()

    async def probe() -> Section:
        return await in_thread(lambda: release.wait(60) and Section("slow", {}))

    report = asyncio.run(gather([("slow", probe)], timeout_s=0.05))
    assert report.problems == ["slow: could not check: no answer within 0.05 s"]
    release.set()  # the thread ends on its own; the loop that waited for it is gone
