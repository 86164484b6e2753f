"""`searchsync offsets reset --to TIME` and `--partition P --offset N` on a real broker."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import orjson
import pytest
from confluent_kafka import Producer
from searchsync.cli import main

from tests.integration.conftest import KAFKA
from tests.integration.kafkatools import fresh_topics, kafka_admin

pytestmark = pytest.mark.integration

BASE_MS = 1_700_000_000_000  # message timestamps set by the producer: BASE + offset seconds


@pytest.fixture
def topic() -> Iterator[str]:
    name = f"it.offsets.{uuid.uuid4().hex[:12]}"
    with fresh_topics(KAFKA, [(name, 2)]):
        producer = Producer({"bootstrap.servers": KAFKA})
        for partition in (0, 1):
            for i in range(5):
                producer.produce(
                    name, value=b"x", partition=partition, timestamp=BASE_MS + i * 1000
                )
        assert producer.flush(30) == 0
        yield name


def _reset(
    topic: str,
    group: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *argv: str,
) -> dict[str, object]:
    for key in [k for k in os.environ if k.startswith("SEARCHSYNC_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("SEARCHSYNC_KAFKA_BOOTSTRAP_SERVERS", KAFKA)
    monkeypatch.setenv("SEARCHSYNC_KAFKA_GROUP_ID", group)
    monkeypatch.setenv("SEARCHSYNC_KAFKA_TOPICS", topic)
    act = () if "--dry-run" in argv else ("--execute",)
    code = main(["offsets", "reset", *argv, *act, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    document: dict[str, object] = orjson.loads(captured.out)
    return document


def test_reset_to_a_time_then_one_partition(
    topic: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    group = f"it-offsets-{uuid.uuid4().hex[:8]}"
    admin = kafka_admin(KAFKA)
    # 2023-11-14T22:13:22Z is BASE + 2 s: the message at offset 2 of each partition
    _reset(topic, group, monkeypatch, capsys, "--to", "2023-11-14T22:13:22Z")
    committed = admin.committed(group, [(topic, 0), (topic, 1)])
    assert committed == {(topic, 0): 2, (topic, 1): 2}
    # a time after every message: the end
    plan = _reset(topic, group, monkeypatch, capsys, "--to", "2026-11-30T12:00:00Z", "--dry-run")
    assert [(s["partition"], s["current"], s["target"]) for s in plan["plan"]] == [  # type: ignore[index, union-attr]
        (0, 2, 5),
        (1, 2, 5),
    ]
    assert admin.committed(group, [(topic, 0)]) == {(topic, 0): 2}  # dry run: unchanged
    _reset(topic, group, monkeypatch, capsys, "--partition", "1", "--offset", "4")
    assert admin.committed(group, [(topic, 0), (topic, 1)]) == {(topic, 0): 2, (topic, 1): 4}
