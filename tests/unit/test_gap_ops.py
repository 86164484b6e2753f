"""The operator's side of a history gap (docs/design.md, invariant 14): `offsets reset` moves over
lost records only with --accept-gap, which records who accepted what and when; `status` names the
blocked partition and the way out. Over the fake cluster of tests/fakes."""

from __future__ import annotations

import orjson
import pytest
from runtime_fakes import Fakes, tables_of
from searchsync.cli import main
from searchsync.config import load_settings
from searchsync.errors import OperationRefused
from searchsync.exit_codes import ExitCode
from searchsync.ops.rebuild.plan import RebuildOptions
from searchsync.ops.status_probes import group_section
from searchsync.resources import KafkaClients

from tests.fakes.gap_acks import FakeGapAcks
from tests.fakes.kafka_admin import FakeTopics
from tests.unit.rebuild_fakes import TOPIC as REBUILD_TOPIC
from tests.unit.rebuild_fakes import TYPE, World, page

TOPIC = "outbox.event.wiki_page"


@pytest.fixture
def kafka() -> FakeTopics:
    """Partition 0: committed 5, but retention deleted everything below 8 (3 records lost)."""
    fakes = FakeTopics()
    fakes.topic(TOPIC, [b""] * 10, [b""] * 4)
    fakes.low[(TOPIC, 0)] = 8
    fakes.commits[("searchsync", (TOPIC, 0))] = 5
    fakes.commits[("searchsync", (TOPIC, 1))] = 2
    return fakes


def _main(kafka: FakeTopics, argv: list[str], acks: FakeGapAcks | None = None) -> int:
    tables = tables_of(gap_acks=acks or FakeGapAcks())
    return main(argv, runtime=Fakes(kafka=KafkaClients(admin=kafka.admin), tables=tables))


def test_a_reset_over_lost_history_is_refused_without_accept_gap(
    kafka: FakeTopics, capsys: pytest.CaptureFixture[str]
) -> None:
    acks = FakeGapAcks()
    argv = ["offsets", "reset", "--to", "earliest", "--execute"]
    assert _main(kafka, argv, acks) == ExitCode.FAILURE
    assert acks.acks == []
    err = capsys.readouterr().err
    assert f"{TOPIC}[0] blocked: committed offset 5 is below the log start 8" in err
    assert "3 record(s)" in err and "searchsync rebuild" in err and "--accept-gap" in err
    assert kafka.altered == []


def test_a_dry_run_shows_the_gap_it_would_accept(
    kafka: FakeTopics, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _main(kafka, ["offsets", "reset", "--to", "earliest", "--dry-run"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert f"would accept gap {TOPIC}/0: 3 record(s) lost (5..7)" in out
    assert kafka.altered == []


def test_accept_gap_moves_to_the_log_start_and_records_who_and_when(
    kafka: FakeTopics, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["offsets", "reset", "--to", "earliest", "--partition", "0", "--accept-gap", "--execute"]
    argv.append("--json")
    acks = FakeGapAcks()
    assert _main(kafka, argv, acks) == ExitCode.OK
    out = orjson.loads(capsys.readouterr().out)
    [kept] = acks.acks  # the lasting record, written before the offset moved
    assert (kept.group, kept.topic, kept.partition) == ("searchsync", TOPIC, 0)
    assert (kept.committed, kept.log_start, kept.missing) == (5, 8, 3)
    assert kafka.committed_by("searchsync")[(TOPIC, 0)] == 8
    [accepted] = out["accepted_gaps"]
    assert (accepted["committed"], accepted["log_start"], accepted["missing"]) == (5, 8, 3)
    assert "@" in accepted["accepted_by"] and accepted["accepted_at"]
    note = orjson.loads(kafka.commit_metadata[("searchsync", (TOPIC, 0))])
    assert note == {"accepted_gap": accepted}


def test_status_names_the_blocked_partition_and_the_way_out(kafka: FakeTopics) -> None:
    kafka.members["searchsync"] = ["c1@/10.0.0.1"]
    section = group_section(kafka.admin({}), load_settings({}))
    [problem] = section.problems
    assert f"{TOPIC}[0] blocked" in problem and "3 record(s)" in problem
    assert "--accept-gap" in problem
    gaps = [p["blocked_gap"] for p in section.data["partitions"]]
    assert gaps == [3, None]


async def test_a_rebuild_refuses_a_catch_up_whose_watermark_was_deleted() -> None:
    w = World()
    for i in range(4):
        w.put(page(f"p{i}", revision=1))
        w.event(f"p{i}", 1)
    await w.init_alias()
    first = await w.rebuilder().run(RebuildOptions(TYPE, stop_after_chunks=1))
    assert not first.ok and first.record is not None
    assert first.record.watermark == {(REBUILD_TOPIC, 0): 4}
    for i in range(4, 8):  # the topic moves on, and retention deletes past the watermark
        w.event(f"p{i % 4}", 2)
    w.topics.low[(REBUILD_TOPIC, 0)] = 6
    with pytest.raises(OperationRefused) as refused:
        await w.rebuilder().run(RebuildOptions(TYPE, resume=True))
    message = str(refused.value)
    assert f"{REBUILD_TOPIC}[0] watermark 4 < log start 6" in message
    assert "`searchsync rebuild --abandon`" in message and "`searchsync rebuild` again" in message
    assert w.topics.altered == []  # the catch-up group never started below the log start
