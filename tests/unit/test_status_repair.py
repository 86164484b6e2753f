"""`searchsync status`'s repair section, and ``repair --daemon``'s metrics endpoint
(docs/design.md, "Repair")."""

from __future__ import annotations

import asyncio
import socket
import urllib.request
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from searchsync.cli import main
from searchsync.config import load_settings
from searchsync.exit_codes import ExitCode
from searchsync.observability.repair_metrics import RepairMetrics
from searchsync.ops.repair.generations import BucketState, Epoch, WheelSnapshot
from searchsync.ops.repair.wheel import serve_metrics
from searchsync.ops.status_probes import repair_section
from test_status import _system, fresh_buckets

NOW = datetime(2026, 7, 20, 12, 0, tzinfo=UTC)
EPOCH = Epoch("wiki_page", 3, 4, 1)


def wheel(buckets: dict[int, BucketState]) -> dict[str, WheelSnapshot]:
    return {"wiki_page": WheelSnapshot("wiki_page", EPOCH, buckets)}


def test_a_fresh_rotation_is_shown_without_warnings() -> None:
    buckets = fresh_buckets(4, NOW - timedelta(minutes=5))
    buckets[2] = BucketState(2, 4, None, NOW - timedelta(minutes=1), 0.1, {"stale": 2})
    section = repair_section(wheel(buckets), max_staleness_s=3600, now=NOW)
    assert section.healthy and section.warnings == ()
    [w] = section.data["wheels"]
    assert (w["epoch"], w["bucket_count"], w["buckets_complete"]) == (3, 4, 4)
    assert w["oldest_age_seconds"] == 300 and w["last_counts"] == {"stale": 2}
    assert w["last_complete_at"] == (NOW - timedelta(minutes=1)).isoformat()


def test_an_oldest_bucket_past_max_staleness_is_a_warning() -> None:
    buckets = fresh_buckets(4, NOW - timedelta(minutes=5))
    buckets[1] = BucketState(1, 1, None, NOW - timedelta(hours=5))
    section = repair_section(wheel(buckets), max_staleness_s=4 * 3600, now=NOW)
    assert section.healthy  # a warning, not a failure
    [warning] = section.warnings
    assert "oldest bucket scanned 18000s ago" in warning and "max_staleness_s 14400" in warning


def test_never_repaired_and_never_scanned_buckets_are_warnings() -> None:
    partial = fresh_buckets(4, NOW)
    partial[0] = BucketState(0, 0, 1)  # running, never completed (an interrupted first scan)
    wheels = {
        **wheel(partial),
        "character": WheelSnapshot("character", None),
    }
    section = repair_section(wheels, max_staleness_s=3600, now=NOW)
    assert section.warnings == (
        "wiki_page: 1 of 4 bucket(s) never scanned completely (run `searchsync repair --once`)",
        "character: never repaired (run `searchsync repair --once`)",
    )
    assert section.data["wheels"][0]["buckets_running"] == 1


def test_status_shows_the_last_rotation_in_both_forms(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stale = wheel(fresh_buckets(4, datetime.now(UTC) - timedelta(days=1)))
    services = _system(members=["c1"], wheels=stale)
    code = main(["status", "--json", "--consumer", "http://127.0.0.1:9"], runtime=services)
    report = orjson.loads(capsys.readouterr().out)
    assert report["sections"]["repair"]["wheels"][0]["buckets_complete"] == 4
    assert any("repair: wiki_page: oldest bucket scanned" in w for w in report["warnings"])
    assert code == ExitCode.OK
    main(["status", "--consumer", "http://127.0.0.1:9"], runtime=services)
    text = capsys.readouterr().out
    assert "repair: WARNING" in text and "wiki_page: epoch 3, 4/4 buckets scanned" in text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_the_daemon_serves_the_repair_metrics_on_its_port() -> None:
    port = _free_port()
    settings = load_settings(
        {
            "SEARCHSYNC_REPAIR_METRICS_PORT": str(port),
            "SEARCHSYNC_OBSERVABILITY_METRICS_HOST": "127.0.0.1",
        }
    )
    metrics = RepairMetrics()
    metrics.set_counts("wiki_page", {"orphan": 3})
    server = await serve_metrics(settings, metrics)
    assert server is not None
    try:
        url = f"http://127.0.0.1:{server.port}/metrics"
        body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=10).read())
        assert b'projection_orphan_count{aggregate_type="wiki_page"} 3.0' in body
    finally:
        await server.close()
    assert await serve_metrics(load_settings({}), metrics) is None  # port 0: off
