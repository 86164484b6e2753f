"""The long-running commands raise the young generation's GC threshold (searchsync/gc_tuning.py)
before they start their work; the older generations keep theirs."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
import searchsync.cli.reconcile as heal_cli
from runtime_fakes import Fakes
from searchsync.cli import main
from searchsync.gc_tuning import YOUNG_THRESHOLD, tune_for_throughput
from searchsync.ops.rebuild.plan import RebuildOutcome


@pytest.fixture(autouse=True)
def python_defaults() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_tuning_raises_only_the_young_threshold_and_returns_the_old_ones() -> None:
    gc.set_threshold(700, 7, 9)
    assert tune_for_throughput() == (700, 7, 9)
    assert gc.get_threshold() == (YOUNG_THRESHOLD, 7, 9)


def test_run_works_under_the_tuned_threshold() -> None:
    seen: list[tuple[int, int, int]] = []

    async def consumer(*_: Any, **__: Any) -> int:
        seen.append(gc.get_threshold())
        return 0

    assert main(["run"], runtime=Fakes(consumer=consumer)) == 0
    assert seen == [(YOUNG_THRESHOLD, 10, 10)]


def test_repair_works_under_the_tuned_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, int, int]] = []

    async def run_repair(*_: Any, **__: Any) -> None:
        seen.append(gc.get_threshold())

    monkeypatch.setattr(heal_cli, "run_repair", run_repair)
    assert main(["repair", "--once", "--dry-run"], runtime=Fakes()) == 0
    assert seen == [(YOUNG_THRESHOLD, 10, 10)]


def test_rebuild_works_under_the_tuned_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, int, int]] = []

    async def run_rebuild(*_: Any, **__: Any) -> RebuildOutcome:
        seen.append(gc.get_threshold())
        return RebuildOutcome(ok=True, action="done", message="done")

    monkeypatch.setattr(heal_cli, "run_rebuild", run_rebuild)
    assert main(["rebuild", "--type", "wiki_page"]) == 0
    assert seen == [(YOUNG_THRESHOLD, 10, 10)]
