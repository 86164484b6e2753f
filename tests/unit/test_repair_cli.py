"""`searchsync repair`: argument rules and the report's two forms (table and JSON)."""

from __future__ import annotations

from searchsync.cli.main import main
from searchsync.cli.repair import render, to_json
from searchsync.ops.repair.model import Finding, FindingKind
from searchsync.ops.repair.report import BucketReport, RotationReport
from searchsync.ops.repair.schedule import Choice
from searchsync.ops.repair.state import Epoch


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
