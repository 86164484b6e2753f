"""What the pipeline logs per outcome: at INFO one summary line per batch for the successes and
one line per event for every failure; at DEBUG also one line per successful event."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pipeline_fakes import event_value, page_row, raw, wait_until
from searchsync.observability.logs import EVENT_OUTCOME_MESSAGE
from searchsync.stream.batches import BATCH_SUMMARY_MESSAGE
from test_pipeline import TP0, Harness, good


def _feed(h: Harness) -> None:
    """Six keys once each, one key three times (two superseded), one poison message."""
    for i in range(6):
        h.truth.put_page(page_row(f"p{i}", 1))
    h.truth.put_page(page_row("hot", 3))
    h.intake.feed(good(o, f"p{o}", 1) for o in range(6))
    h.intake.feed(good(6 + r, "hot", r + 1) for r in range(3))
    h.intake.feed([raw(9, event_value("x", 0))])  # BAD_REVISION: dead-lettered


async def _run(h: Harness) -> None:
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 10, "commit of all 10 offsets")


def _outcome_lines(caplog: pytest.LogCaptureFixture) -> list[Any]:
    return [r for r in caplog.records if r.getMessage() == EVENT_OUTCOME_MESSAGE]


def _summaries(caplog: pytest.LogCaptureFixture) -> list[Any]:
    return [r for r in caplog.records if r.getMessage() == BATCH_SUMMARY_MESSAGE]


async def test_at_info_successes_are_one_summary_per_batch(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="searchsync")
    h = Harness(per_consume=4)
    _feed(h)
    await _run(h)
    assert _outcome_lines(caplog) == []  # no per-event line for a success
    failures = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.offset, r.error_code) for r in failures] == [(9, "BAD_REVISION")]
    summaries = _summaries(caplog)
    assert len(summaries) >= 1 and all(r.levelno == logging.INFO for r in summaries)
    totals: dict[str, int] = {}
    for r in summaries:
        assert r.finished == sum(r.results.values())
        for result, n in r.results.items():
            totals[result] = totals.get(result, 0) + n
    assert sum(totals.values()) == 9  # every offset but the dead-lettered one, once
    assert totals["applied"] >= 7
    for result, n in totals.items():  # the metrics count what the summaries say
        labels = {"aggregate_type": "wiki_page", "result": result}
        assert h.sample("searchsync_event_outcomes_total", **labels) == n


async def test_at_debug_every_successful_event_has_its_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="searchsync")
    h = Harness(per_consume=4)
    _feed(h)
    await _run(h)
    lines = _outcome_lines(caplog)
    by_offset = {r.offset: (r.levelno, r.result) for r in lines}
    assert len(lines) == len(by_offset) == 9  # one line per successful event
    assert {o: by_offset[o] for o in range(6)} == {o: (logging.DEBUG, "applied") for o in range(6)}
    assert {by_offset[o][0] for o in (6, 7, 8)} == {logging.DEBUG}
    assert by_offset[8][1] in ("applied", "already_applied")
