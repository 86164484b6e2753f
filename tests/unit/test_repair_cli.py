"""`searchsync repair`: argument rules and the report's two forms (table and JSON)."""

from __future__ import annotations

import json

import pytest
from pipeline_fakes import PageTruth, page_row
from runtime_fakes import Fakes, search_of, tables_of
from searchsync.cli import main
from searchsync.cli.reconcile import render, to_json
from searchsync.ops.repair.generations import Choice, Epoch
from searchsync.ops.repair.model import BucketReport, Finding, FindingKind, RotationReport
from searchsync.resources import KafkaClients

from tests.fakes.kafka_admin import FakeTopics
from tests.fakes.outbox import FakeOutbox
from tests.fakes.search_index import InMemoryIndex
from tests.fakes.wheel_state import FakeWheelState


def test_repair_needs_once_or_daemon_and_not_both() -> None:
    assert main(["repair"]) == 2
    assert main(["repair", "--once", "--daemon"]) == 2


def test_an_unknown_type_is_a_usage_error() -> None:
    assert main(["repair", "--once", "--type", "nope"]) == 2


def test_the_table_and_the_json_carry_the_same_counts() -> None:
    bucket = BucketReport("wiki_page", 0, 1, True, rows=3, docs=3, candidates=2, appended=1)
    bucket.findings = [Finding(FindingKind.ORPHAN, "wiki_page", "a", None, 4)]
    report = RotationReport(
        epochs={"wiki_page": Epoch("wiki_page", 1, 4, 1)},
        buckets=[bucket, BucketReport("wiki_page", 1, 1, False, interrupted="boom")],
        choices=[("wiki_page", Choice(0, 1.5, 10.0, 0.1, 0.2, False))],
    )
    data = to_json(report, dry_run=True)
    assert data["counts"]["orphan"] == 1 and data["buckets_scanned"] == 1
    assert data["buckets_interrupted"] == 1 and data["settled_away"] == 1
    assert data["buckets_content_checked"] == 1
    text = "\n".join(render(report, dry_run=True))
    assert "dry run" in text and "orphan" in text and "interrupted 1" in text
    assert "stray" in text and data["content_share"] == 0.0


def test_a_content_share_outside_0_to_1_is_a_usage_error() -> None:
    assert main(["repair", "--once", "--content-share", "1.5"]) == 2
    assert main(["repair", "--once", "--content-share", "all"]) == 2


@pytest.mark.parametrize(
    ("flags", "share"),
    [([], 1.0), (["--content-share", "0"], 0.0), (["--content-share", "1"], 1.0)],
)
def test_once_checks_the_content_of_every_bucket_unless_told_and_says_so(
    flags: list[str],
    share: float,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in [("SETTLE_S", "0"), ("BUCKET_COUNT", "4"), ("CONTENT_SHARE", "0.1")]:
        monkeypatch.setenv(f"SEARCHSYNC_REPAIR_{key}", value)
    truth, index = PageTruth(), InMemoryIndex()
    index.given_index("searchsync_wiki_page_v1", {"mappings": {}})
    index.given_alias("searchsync_wiki_page", "searchsync_wiki_page_v1")
    for n in range(8):
        truth.put_page(page_row(f"p{n}", 2))
    fakes = Fakes(
        tables=tables_of(truth=truth, wheel_state=FakeWheelState(), outbox=FakeOutbox()),
        search=search_of(aliased=index),
        kafka=KafkaClients(admin=FakeTopics().admin),
    )
    assert main(["repair", "--once", "--json", *flags], runtime=fakes) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["content_share"] == share and data["buckets_scanned"] == 4
    assert data["buckets_content_checked"] == 4 * share
    assert data["strays"] == [
        {
            "aggregate_type": "wiki_page",
            "outside_key_space": 0,
            "misplaced": 0,
            "candidates": 0,
            "confirmed": 0,
            "appended": 0,
            "ahead_of_row": 0,
            "truncated": False,
            "interrupted": None,
        }
    ]
