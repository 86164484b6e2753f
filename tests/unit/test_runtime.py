"""The runtime: the rebuilder and the repair wheel built on fakes (`Runtime(settings, ports)`),
and the real runtime opening nothing before a part asks for it (`Runtime(settings)`)."""

from __future__ import annotations

import pytest
from pipeline_fakes import PageTruth, page_row
from rebuild_fakes import TOPIC, TYPE, World
from runtime_fakes import search_of, tables_of
from searchsync.config import load_settings
from searchsync.errors import TransientError
from searchsync.observability.repair_metrics import RepairMetrics
from searchsync.ops.rebuild.plan import RebuildOptions
from searchsync.ops.rebuild.progress import Progress
from searchsync.ops.repair.model import FindingKind, RotationReport
from searchsync.ops.repair.wheel import run_repair
from searchsync.resources import KafkaClients, Ports
from searchsync.runtime import Runtime
from test_rebuild import world_with_pages

from tests.fakes.kafka_admin import FakeTopics
from tests.fakes.outbox import FakeOutbox
from tests.fakes.replay_ledger import FakeReplayLedger
from tests.fakes.search_index import InMemoryIndex
from tests.fakes.search_state import StoredDoc
from tests.fakes.wheel_state import FakeWheelState


async def test_the_rebuilder_on_fakes_plans_a_dry_run() -> None:
    w: World = world_with_pages(3)
    await w.init_alias()
    ports = Ports(
        tables=tables_of(truth=w.truth, rebuild_state=w.state, outbox=w.outbox),
        search=search_of(admin=w.es.admin, physical=w.es.physical_writer()),
        connect=None,
        replay_ledger=FakeReplayLedger(),
        kafka=KafkaClients(admin=lambda config: w.kafka),
    )
    async with Runtime(w.settings, ports) as runtime:
        rebuilder = await runtime.rebuilder(metrics=w.metrics, progress=Progress(stream=w.out))
        outcome = await rebuilder.run(RebuildOptions(TYPE, dry_run=True))
    assert outcome.ok and outcome.plan is not None
    assert (outcome.plan.current_index, outcome.plan.new_index) == (
        f"{w.alias}_v1",
        f"{w.alias}_v2",
    )
    assert outcome.plan.rows == 3 and dict(outcome.plan.watermark) == {(TOPIC, 0): 3}
    assert w.state.records == {} and w.topics.altered == []


async def test_the_repair_wheel_on_fakes_finds_and_heals_a_missing_document() -> None:
    env = {"SEARCHSYNC_REPAIR_SETTLE_S": "0", "SEARCHSYNC_REPAIR_BUCKET_COUNT": "2"}
    settings = load_settings(env)
    truth, outbox, index = PageTruth(), FakeOutbox(), InMemoryIndex()
    runtime = Runtime(settings, _repair_ports(truth, outbox, index))
    projector = runtime.registry.get("wiki_page")
    truth.put_page(page_row("here", 2))
    truth.put_page(page_row("missing", 2))
    here = StoredDoc(2, dict(projector.project(page_row("here", 2)).body))
    index.indices["searchsync_wiki_page_v1"].docs["here"] = here
    reports: list[RotationReport] = []
    async with runtime:
        wheel = await runtime.repair_wheel([projector], dry_run=False)
        last = await run_repair(
            wheel, settings, daemon=False, metrics=RepairMetrics(), on_report=reports.append
        )
    assert reports == [last]
    assert [(f.id, f.kind) for b in last.buckets for f in b.findings] == [
        ("missing", FindingKind.MISSING)
    ]
    assert [(t, i) for t, i, _ in outbox.events] == [("wiki_page", "missing")]


async def test_the_real_runtime_connects_only_when_a_part_asks() -> None:
    settings = load_settings(
        {"SEARCHSYNC_MYSQL_HOST": "127.0.0.1", "SEARCHSYNC_MYSQL_PORT": "1"}  # nothing listens
    )
    async with Runtime(settings) as runtime:
        search = runtime.search()  # a client, not a connection
        assert runtime.search() is search
        assert runtime.registry.types() == ("wiki_page",)
        with pytest.raises(TransientError):
            await runtime.tables()
    async with runtime:
        assert runtime.search() is not search  # closed on exit, opened again on use


def _repair_ports(truth: PageTruth, outbox: FakeOutbox, index: InMemoryIndex) -> Ports:
    index.given_index("searchsync_wiki_page_v1", {"mappings": {}})
    index.given_alias("searchsync_wiki_page", "searchsync_wiki_page_v1")
    return Ports(
        tables=tables_of(truth=truth, wheel_state=FakeWheelState(), outbox=outbox),
        search=search_of(aliased=index),
        connect=None,
        replay_ledger=FakeReplayLedger(),
        kafka=KafkaClients(admin=FakeTopics().admin),
    )
