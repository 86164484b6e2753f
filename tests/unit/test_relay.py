"""The polling relay on a fake store: claim, publish, mark, retry, DEAD, take back, revive;
NextRetry's backoff bounds; the router record; the [relay] settings."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import timedelta

import pytest
from confluent_kafka import KafkaError, KafkaException
from hypothesis import given
from hypothesis import strategies as st
from searchsync.config import RelaySettings, load_settings
from searchsync.errors import ConfigError, DeliveryFailed
from searchsync.relay.port import DEAD, PENDING, PROCESSING, PUBLISHED, OutboxEntry, router_record
from searchsync.relay.relay import (
    RELAY_METRIC_NAMES,
    Relay,
    RelayMetrics,
    retry_delay,
    row_fault,
    seed_retry,
)

from tests.fakes.relay_store import FakePublisher, FakeRelayStore

SETTINGS = RelaySettings(batch_size=3, max_attempts=3, claim_timeout_s=60.0)


def relay(
    store: FakeRelayStore, publisher: FakePublisher, holder: str = "r1", **kw: object
) -> Relay:
    return Relay(store, publisher, SETTINGS, holder=holder, **kw)  # type: ignore[arg-type]


# -- NextRetry ---------------------------------------------------------------------------------


class Draws(random.Random):
    """A random source whose ``random()`` is drawn by Hypothesis."""

    def __init__(self, data: st.DataObject) -> None:
        super().__init__(0)
        self._data = data

    def random(self) -> float:
        return self._data.draw(st.floats(0.0, 1.0, exclude_max=True))


@given(attempt=st.integers(0, 200), data=st.data())
def test_the_relays_backoff_stays_within_seed_bounds(attempt: int, data: st.DataObject) -> None:
    """A row that failed `attempt` times before waits NextRetry(attempt)."""
    base = min(timedelta(seconds=1) * 2 ** min(attempt, 10), timedelta(minutes=30))
    jitter = max(base / 5, timedelta(milliseconds=1))
    delay = retry_delay(seed_retry(10, Draws(data)), attempt)
    assert base <= delay < base + jitter


def test_the_relays_backoff_is_the_seeds_at_the_extremes() -> None:
    class Low(random.Random):
        def random(self) -> float:
            return 0.0

    low = seed_retry(3, Low())
    assert [low.delay(n) for n in (1, 2, 3, 11, 12, 30)] == [1, 2, 4, 1024, 1024, 1024]
    assert seed_retry(3).delay(1) < 1.2
    assert seed_retry(3).exhausted(3) and not seed_retry(3).exhausted(2)


async def test_a_failed_row_waits_next_retry_of_its_earlier_attempts() -> None:
    store, publisher = FakeRelayStore(), FakePublisher(refuse={"bad"})
    row = store.rows[store.add("bad")]
    row.attempts = 4  # failed four times before
    await Relay(store, publisher, replace(SETTINGS, max_attempts=10), holder="r").tick()
    assert (row.status, row.attempts) == (PENDING, 5)
    assert 16.0 <= row.available_at - store.now < 16.0 * 1.2  # NextRetry(4)


# -- the Outbox Event Router's record ------------------------------------------------------------


def test_router_record_matches_the_event_router_configuration() -> None:
    payload = (
        '{"event_id": "e-1", "aggregate_type": "wiki_page", "aggregate_id": "p é",\n'
        ' "operation": "UPSERT", "source_revision": 42}'
    )
    entry = OutboxEntry(7, "e-1", "wiki_page", "p é", "UPSERT", 42, payload, 0)
    record = router_record(entry)
    assert record.topic == "outbox.event.wiki_page"
    assert record.key == "p é".encode()
    assert (
        record.value
        == (
            '{"event_id":"e-1","aggregate_type":"wiki_page","aggregate_id":"p é",'
            '"operation":"UPSERT","source_revision":42}'
        ).encode()
    )
    assert record.headers == [
        ("id", b"e-1"),
        ("searchsync-operation", b"UPSERT"),
        ("searchsync-revision", b"42"),
        ("searchsync-aggregate-type", b"wiki_page"),
    ]
    assert router_record(entry, "t-{type}.x").topic == "t-wiki_page.x"


def test_router_record_refuses_a_payload_that_is_not_a_json_object() -> None:
    with pytest.raises(ValueError):
        router_record(OutboxEntry(1, "e", "t", "a", "UPSERT", 1, "[1]", 0))


# -- the relay loop ------------------------------------------------------------------------------


async def test_tick_claims_publishes_and_marks_published_in_id_order() -> None:
    store, publisher = FakeRelayStore(), FakePublisher()
    ids = [store.add(f"p{i}") for i in range(5)]
    report = await relay(store, publisher).tick()
    assert (report.claimed, report.published, report.failed) == (3, 3, 0)
    assert store.claims == [("r1", ids[:3])]  # ORDER BY id LIMIT batch_size
    assert [k for _, _, k, _ in publisher.sent] == [b"p0", b"p1", b"p2"]
    assert [store.rows[i].status for i in ids] == [PUBLISHED] * 3 + [PENDING] * 2
    await relay(store, publisher).tick()
    assert all(r.status == PUBLISHED for r in store.rows.values())
    assert json.loads(publisher.sent[0][1])["aggregate_id"] == "p0"


async def test_a_failed_publish_waits_out_the_backoff_and_ends_dead_then_revives() -> None:
    store, publisher = FakeRelayStore(), FakePublisher(refuse={"bad"})
    bad, good = store.add("bad"), store.add("good")
    r = relay(store, publisher)
    report = await r.tick()
    assert (report.published, report.failed, report.dead) == (1, 1, 0)
    row = store.rows[bad]
    assert (row.status, row.attempts, row.locked_by) == (PENDING, 1, None)
    assert "broker refused bad" in (row.last_error or "")
    assert 1.0 <= row.available_at - store.now < 1.2  # NextRetry(0)
    assert (await r.tick()).claimed == 0  # not available yet
    store.now = row.available_at
    await r.tick()
    assert (row.attempts, 2.0 <= row.available_at - store.now < 2.4) == (2, True)
    store.now = row.available_at
    report = await r.tick()
    assert (row.status, row.attempts, report.dead) == (DEAD, 3, 1)  # max_attempts = 3
    store.now += 10_000
    assert (await r.tick()).claimed == 0  # DEAD rows are never claimed
    assert [d.id for d in await store.dead(10)] == [bad]
    assert await store.revive([bad]) == 1
    publisher.refuse.clear()
    await r.tick()
    assert (row.status, store.rows[good].status) == (PUBLISHED, PUBLISHED)


async def test_while_kafka_is_away_no_row_counts_an_attempt_and_the_relay_backs_off() -> None:
    store, publisher = FakeRelayStore(), FakePublisher(away=True)
    ids = [store.add(f"p{i}") for i in range(3)]
    r = relay(store, publisher)
    for outage in range(12):  # longer than max_attempts (3) ticks
        report = await r.tick()
        assert (report.unavailable, report.failed, report.dead) == (3, 0, 0)
        waits = [store.rows[i].available_at - store.now for i in ids]
        nominal = min(2.0**outage, 1024.0)  # NextRetry(outage)
        assert all(nominal <= w < nominal * 1.2 for w in waits)
        assert {(store.rows[i].status, store.rows[i].attempts) for i in ids} == {(PENDING, 0)}
        store.now = max(store.rows[i].available_at for i in ids)
    publisher.away = False
    report = await r.tick()
    assert report.published == 3 and all(store.rows[i].status == PUBLISHED for i in ids)


def test_row_fault_tells_the_rows_failures_from_kafkas() -> None:
    assert row_fault(ValueError("payload is not a JSON object"))
    assert row_fault(DeliveryFailed(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)))
    assert row_fault(KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)))  # at produce()
    assert row_fault(DeliveryFailed(KafkaError(KafkaError.TOPIC_EXCEPTION)))
    assert not row_fault(DeliveryFailed(KafkaError(KafkaError._TRANSPORT)))
    assert not row_fault(DeliveryFailed(KafkaError(KafkaError._MSG_TIMED_OUT)))
    assert not row_fault(DeliveryFailed(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)))
    assert not row_fault(KafkaException(KafkaError(KafkaError._QUEUE_FULL)))
    assert not row_fault(BufferError("queue full"))
    assert not row_fault(TimeoutError())


async def test_a_dead_holders_claim_is_taken_back_after_the_timeout() -> None:
    store, publisher = FakeRelayStore(), FakePublisher()
    row_id = store.add("p")
    await store.claim("crashed", 100)  # a relay that died between claim and mark
    metrics = RelayMetrics()
    r = relay(store, publisher, metrics=metrics)
    store.now = 59.0
    assert (await r.tick()).claimed == 0  # its claim is still young
    assert store.rows[row_id].status == PROCESSING
    store.now = 61.0
    report = await r.tick()
    assert (report.taken_back, report.published) == (1, 1)
    assert store.rows[row_id].status == PUBLISHED and store.rows[row_id].attempts == 1
    assert b"outbox_claim_timeout_count_total 1.0" in metrics.render()


async def test_two_relays_never_claim_one_row_twice_and_lose_none() -> None:
    store, publisher = FakeRelayStore(), FakePublisher()
    ids = {store.add(f"p{i}") for i in range(10)}
    a, b = relay(store, publisher, "a"), relay(store, publisher, "b")
    for _ in range(4):
        await a.tick()
        await b.tick()
    claimed = [i for _, batch in store.claims for i in batch]
    assert sorted(claimed) == sorted(ids)  # each row claimed exactly once
    assert {h for h, batch in store.claims if batch} == {"a", "b"}
    assert all(r.status == PUBLISHED for r in store.rows.values())


async def test_metrics_have_the_seed_names_and_meanings() -> None:
    store, publisher = FakeRelayStore(), FakePublisher(refuse={"bad"})
    store.add("bad")
    store.add("good")
    await store.claim("other", 0)
    metrics = RelayMetrics()
    r = relay(store, publisher, metrics=metrics)
    await r.tick()
    store.add("young")
    store.now = 5.0
    await r.refresh_stats()
    text = metrics.render().decode()
    for name in RELAY_METRIC_NAMES:
        assert name in text
    assert "outbox_pending_count 2.0" in text  # the retry and the young row
    assert "outbox_oldest_pending_age_seconds 5.0" in text
    assert "outbox_retry_rate 0.5" in text  # 1 failed of 2 attempts
    assert "outbox_dead_count 0.0" in text and "outbox_processing_count 0.0" in text


# -- [relay] settings ----------------------------------------------------------------------------


def test_relay_settings_defaults_and_environment() -> None:
    assert load_settings({}).relay == RelaySettings()
    got = load_settings({"SEARCHSYNC_RELAY_BATCH_SIZE": "50", "SEARCHSYNC_RELAY_ENABLED": "true"})
    assert (got.relay.batch_size, got.relay.enabled) == (50, True)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("batch_size", "0"),
        ("table", "search-outbox"),
        ("topic_template", "outbox.event"),
        ("max_attempts", "x"),
        ("claim_timeout_s", "10"),  # not above publish_timeout_s (30)
        ("enabled", "maybe"),
        ("metrics_port", "70000"),
    ],
)
def test_bad_relay_settings_name_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({f"SEARCHSYNC_RELAY_{key.upper()}": value})
    assert caught.value.key == f"relay.{key}"
