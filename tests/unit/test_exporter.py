"""`searchsync exporter` on fakes: the group as the broker sees it with no live member, the seed's
outbox_* gauges from it, the canary's age, and /healthz after a failed observation."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import pytest
from confluent_kafka import KafkaError, KafkaException
from searchsync.config import Settings, load_settings
from searchsync.errors import ConfigError
from searchsync.types import TopicPartition
from searchsync.watch.canary import Canary, build, projectors
from searchsync.watch.exporter import EXPORTER_METRIC_NAMES, Exporter, ExporterMetrics
from searchsync.watch.group import KafkaPeek, observe_group

from tests.fakes.kafka_admin import FakeTopics

TOPIC = "outbox.event.wiki_page"
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)


def _settings(**env: str) -> Settings:
    return load_settings({"SEARCHSYNC_KAFKA_GROUP_ID": "g", **env})


def _topics() -> FakeTopics:
    """Partition 0: 5 messages, committed 2; partition 1: 3 messages, all committed."""
    topics = FakeTopics()
    topics.topic(TOPIC, [b"a"] * 5, [b"b"] * 3)
    topics.commits[("g", (TOPIC, 0))] = 2
    topics.commits[("g", (TOPIC, 1))] = 3
    topics.stamps[(TOPIC, 0)] = [NOW_MS - s * 1000 for s in (90, 80, 70, 60, 50)]
    return topics


def _value(metrics: ExporterMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def _exporter(topics: FakeTopics, settings: Settings, canary: Canary | None = None) -> Exporter:
    clock = iter(range(0, 10_000, 1))
    return Exporter(
        settings,
        admin=topics.admin({}),
        peek=KafkaPeek({}, "g", timeout_s=1.0, factory=topics.consumer),
        metrics=ExporterMetrics(2, canary=canary is not None),
        canary=canary,
        wall_clock=lambda: NOW,
        clock=lambda: float(next(clock)),
    )


def test_the_group_without_a_member_has_its_lag_and_oldest_event_read_at_the_broker() -> None:
    topics = _topics()
    view = observe_group(
        topics.admin({}),
        _settings(),
        KafkaPeek({}, "g", timeout_s=1.0, factory=topics.consumer),
        now_ms=NOW_MS,
    )
    assert view.members == 0
    assert [(p.partition, p.lag) for p in view.partitions] == [(0, 3), (1, 0)]
    assert view.partitions[0].oldest_age_s == 70.0  # the message at the committed offset
    assert view.partitions[1].oldest_age_s is None  # nothing unfinished: nothing read
    assert (view.lag, view.oldest_age_s) == (3, 70.0)
    assert topics.consumers[0].config["group.id"] == "g.exporter"  # never the group itself


def test_the_exporter_serves_the_group_and_the_seeds_outbox_gauges() -> None:
    topics = _topics()
    topics.members["g"] = ["searchsync-1@host"]
    exporter = _exporter(topics, _settings())
    asyncio.run(exporter.observe())
    m = exporter.metrics
    assert _value(m, "searchsync_group_lag", topic=TOPIC, partition="0") == 3
    assert _value(m, "searchsync_group_lag", topic=TOPIC, partition="1") == 0
    age = "searchsync_group_oldest_unfinished_age_seconds"
    assert _value(m, age, topic=TOPIC, partition="0") == 70.0
    assert _value(m, age, topic=TOPIC, partition="1") == 0.0
    assert _value(m, "searchsync_group_members") == 1
    assert _value(m, "searchsync_group_expected_members") == 2
    assert _value(m, "outbox_pending_count") == 3
    assert _value(m, "outbox_oldest_pending_age_seconds") == 70.0
    assert _value(m, "searchsync_canary_age_seconds") is None  # canary off: no series at all
    assert exporter.health().ready
    assert b"outbox_pending_count 3.0" in m.render()


def test_a_failed_observation_is_counted_and_makes_healthz_not_ready() -> None:
    topics = _topics()
    topics.fail_with = KafkaException(KafkaError(KafkaError._TRANSPORT, "broker down"))
    exporter = _exporter(topics, _settings())
    asyncio.run(exporter.observe())
    assert _value(exporter.metrics, "searchsync_exporter_errors_total", probe="group") == 1
    report = exporter.health()
    assert not report.ready and "broker down" in report.reasons[0]
    topics.fail_with = None
    asyncio.run(exporter.observe())
    assert exporter.health().ready


def test_series_of_a_partition_no_longer_seen_are_dropped() -> None:
    topics = _topics()
    exporter = _exporter(topics, _settings())
    asyncio.run(exporter.observe())
    del topics.logs[TOPIC][1]
    asyncio.run(exporter.observe())
    m = exporter.metrics
    assert _value(m, "searchsync_group_lag", topic=TOPIC, partition="1") is None
    assert _value(m, "searchsync_group_lag", topic=TOPIC, partition="0") == 3


class _Canary:
    def __init__(self) -> None:
        self.beats: list[datetime] = []
        self.three = asyncio.Event()
        self.seen: datetime | None = None
        self.aliases: list[str] = []

    async def beat(self, now: datetime) -> int:
        self.beats.append(now)
        if len(self.beats) >= 3:
            self.three.set()
        return len(self.beats)

    async def beat_at(self, alias: str) -> datetime | None:
        self.aliases.append(alias)
        return self.seen


def test_the_canary_age_grows_until_a_heartbeat_is_searchable_then_drops() -> None:
    store = index = _Canary()
    wall = [NOW]
    exporter = Exporter(
        _settings(SEARCHSYNC_CANARY_INTERVAL_S="5"),
        admin=_topics().admin({}),
        peek=KafkaPeek({}, "g", timeout_s=1.0, factory=_topics().consumer),
        metrics=ExporterMetrics(1, canary=True),
        canary=store,
        wall_clock=lambda: wall[0],
    )
    age = "searchsync_canary_age_seconds"
    asyncio.run(exporter.beat())
    wall[0] = NOW + timedelta(seconds=30)
    asyncio.run(exporter.read_canary())
    assert _value(exporter.metrics, age) == 30.0  # none searchable: the wait since start
    index.seen = store.beats[0]  # the heartbeat got through
    wall[0] = NOW + timedelta(seconds=31)
    asyncio.run(exporter.read_canary())
    assert _value(exporter.metrics, age) == 31.0  # the heartbeat committed at NOW
    asyncio.run(exporter.beat())
    index.seen = store.beats[1]
    asyncio.run(exporter.read_canary())
    assert _value(exporter.metrics, age) == 0.0
    assert _value(exporter.metrics, "searchsync_canary_beats_total") == 2
    assert index.aliases[0] == "searchsync_searchsync_canary"


def test_run_observes_beats_and_looks_until_stopped() -> None:
    store = index = _Canary()
    settings = _settings(SEARCHSYNC_CANARY_INTERVAL_S="0.01")
    exporter = _exporter(_topics(), settings, store)

    async def go() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(exporter.run(stop))
        await asyncio.wait_for(store.three.wait(), 5)
        stop.set()
        await asyncio.wait_for(task, 5)

    asyncio.run(go())
    assert exporter.health().ready and index.aliases


def test_the_canary_projector_projects_the_heartbeat() -> None:
    (projector,) = projectors()
    row = {
        "id": "searchsync",
        "beat_at": datetime(2026, 1, 1, 12),
        "revision": 7,
        "deleted_at": None,
    }
    assert build(row) == {"beat_at": "2026-01-01T12:00:00+00:00", "is_deleted": False}
    document = projector.project(row)
    assert document.body["beat_at"] == "2026-01-01T12:00:00+00:00"
    assert document.body["source_revision"] == 7


def test_every_exporter_metric_is_listed() -> None:
    registry = ExporterMetrics(1, canary=True).registry
    assert {f.name for f in registry.collect()} == set(EXPORTER_METRIC_NAMES)


def test_the_watch_settings_are_read_and_checked() -> None:
    settings = _settings(
        SEARCHSYNC_CANARY_INTERVAL_S="10", SEARCHSYNC_EXPORTER_EXPECTED_MEMBERS="3"
    )
    assert (settings.canary.interval_s, settings.exporter.expected_members) == (10.0, 3)
    assert _settings().canary.interval_s == 0.0  # off unless asked for
    with pytest.raises(ConfigError) as bad:
        _settings(SEARCHSYNC_EXPORTER_INTERVAL_S="0")
    assert bad.value.key == "exporter.interval_s"


def test_each_deployment_beats_its_own_heartbeat_row() -> None:
    assert _settings(SEARCHSYNC_KAFKA_GROUP_ID="shop-prod").canary_id() == "shop-prod"
    assert _settings(SEARCHSYNC_KAFKA_GROUP_ID="g" * 80).canary_id() == "g" * 64  # the column
    pinned = _settings(SEARCHSYNC_KAFKA_GROUP_ID="a", SEARCHSYNC_CANARY_ID="blue")
    assert pinned.canary_id() == "blue"
    with pytest.raises(ConfigError) as bad:
        _settings(SEARCHSYNC_CANARY_ID="no spaces")
    assert bad.value.key == "canary.id"


class _Blind:
    """A peek that never gets an answer in time."""

    def timestamps(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        return {}


def test_an_unread_oldest_event_is_nan_never_zero() -> None:
    topics = _topics()
    view = observe_group(topics.admin({}), _settings(), _Blind(), now_ms=NOW_MS)
    assert view.lag == 3 and math.isnan(view.oldest_age_s)
    metrics = ExporterMetrics(1, canary=False)
    metrics.set_group(view)
    age = "searchsync_group_oldest_unfinished_age_seconds"
    assert math.isnan(_value(metrics, age, topic=TOPIC, partition="0") or 0.0)
    assert _value(metrics, age, topic=TOPIC, partition="1") == 0.0  # no lag: truly nothing


def test_what_could_not_be_observed_has_no_value_and_up_says_so() -> None:
    topics = _topics()
    exporter = _exporter(topics, _settings())
    m = exporter.metrics
    assert _value(m, "searchsync_exporter_up") == 0  # nothing observed yet
    assert _value(m, "outbox_pending_count") is None
    asyncio.run(exporter.observe())
    assert _value(m, "searchsync_exporter_up") == 1
    assert _value(m, "outbox_pending_count") == 3
    topics.fail_with = KafkaException(KafkaError(KafkaError._TRANSPORT, "broker down"))
    asyncio.run(exporter.observe())
    assert _value(m, "searchsync_exporter_up") == 0
    for name in (
        "outbox_pending_count",
        "outbox_oldest_pending_age_seconds",
        "searchsync_group_members",
    ):
        assert _value(m, name) is None, name  # no value: never a 0 for what was not seen
    assert _value(m, "searchsync_group_lag", topic=TOPIC, partition="0") is None
    assert b"\noutbox_pending_count " not in m.render()
    assert isinstance(exporter.last_failure, KafkaException)
