"""`searchsync index load` and `index init --load` through the real CLI, on fakes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
import pytest
from runtime_fakes import Fakes, search_of, tables_of
from searchsync.cli import main
from searchsync.exit_codes import ExitCode
from searchsync.resources import KafkaClients

from tests.fakes.kafka_admin import FakeTopics
from tests.fakes.load_state import FakeLoadState
from tests.fakes.search_index import InMemoryIndex
from tests.fakes.truth import FakeTruth
from tests.unit.rebuild_fakes import page


def _services(es: InMemoryIndex, rows: int = 3) -> tuple[Fakes, FakeLoadState]:
    truth = FakeTruth()
    for i in range(rows):
        row = page(f"p{i}", revision=2)
        row["deleted_at"] = datetime(2026, 1, 1) if i == 1 else None
        truth.put(row, table="wiki_page")
    state = FakeLoadState()
    fakes = Fakes(
        tables=tables_of(truth=truth, load_state=state),
        search=search_of(admin=es.admin, aliased=es),
        kafka=KafkaClients(admin=FakeTopics().admin),
    )
    return fakes, state


def _json(capsys: pytest.CaptureFixture[str]) -> Any:
    return orjson.loads(capsys.readouterr().out)


def test_init_with_load_creates_the_index_then_loads_it_and_a_second_load_does_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX", "kb")
    es = InMemoryIndex()
    services, state = _services(es)
    assert main(["index", "init", "--load", "--json"], runtime=services) == ExitCode.OK
    out = _json(capsys)
    assert out["action"] == "created" and out["load"]["action"] == "done"
    assert out["load"]["rows_this_run"] == 3 and out["load"]["load"]["status"] == "done"
    stored = es.get("kb_wiki_page", "p1")
    assert stored is not None and stored.version == 2 and stored.body["is_deleted"] is True
    assert main(["index", "load", "--json"], runtime=services) == ExitCode.OK
    again = _json(capsys)
    assert again["action"] == "already_done" and again["rows_this_run"] == 0
    assert len(state.records) == 1


def test_a_load_prints_one_summary_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX", "kb")
    es = InMemoryIndex()
    services, _ = _services(es)
    assert main(["index", "init"], runtime=services) == ExitCode.OK
    capsys.readouterr()
    assert main(["index", "load", "--part", "1/2"], runtime=services) == ExitCode.OK
    captured = capsys.readouterr()
    [line] = captured.out.splitlines()
    assert line.startswith("loaded part 1/2 of the wiki_page load into kb_wiki_page_v1")
    assert "rows/s" in line and "[watermark]" in captured.err


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["--where", "id = 1; DROP TABLE wiki_page"], "';' is refused"),
        (["--where", "id = 1 -- rest"], "comment"),
        (["--part", "2/2"], "want 0 <= i < N"),
        (["--part", "half"], "want i/N"),
    ],
)
def test_bad_options_are_usage_errors_before_anything_runs(
    argv: list[str], why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", "load", *argv], runtime=Fakes()) == ExitCode.USAGE
    assert why in capsys.readouterr().err


def test_load_without_an_index_names_index_init(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    es = InMemoryIndex()
    services, _ = _services(es)
    assert main(["index", "load"], runtime=services) == ExitCode.FAILURE
    assert "searchsync index init --type wiki_page" in capsys.readouterr().err


def test_init_dry_run_with_load_says_both_and_changes_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX", "kb")
    es = InMemoryIndex()
    services, state = _services(es)
    argv = ["index", "init", "--load", "--dry-run", "--json"]
    assert main(argv, runtime=services) == ExitCode.OK
    out = _json(capsys)
    assert out["action"] == "would_create" and "then would load every row" in out["message"]
    assert not es.has("kb_wiki_page_v1") and not state.records
