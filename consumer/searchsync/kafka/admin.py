"""What the operator commands ask the Kafka cluster (`KafkaAdmin`), implemented with ``AdminClient``
alone (`ConfluentKafkaAdmin`; no consumer joins a group). Waits for leaders end in `TransientError`
at their deadline; offsets are read at ``read_committed``."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicCollection,
)
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from searchsync.clock import Deadline
from searchsync.errors import ErrorCode, TransientError
from searchsync.kafka.config import routed
from searchsync.types import TopicPartition

KAFKA_TIMEOUT_S: Final = 15.0
# A group with no members in one of these states is still busy (joining or rebalancing).
_ACTIVE_STATES: Final = frozenset({"STABLE", "PREPARING_REBALANCING", "COMPLETING_REBALANCING"})
_RETRY_PAUSE_S: Final = 0.1
_SPEC: Final[Any] = OffsetSpec  # confluent-kafka's offset specs are untyped


@dataclass(frozen=True, slots=True)
class Watermarks:
    """The first offset still held and the offset of the next message."""

    low: int
    high: int


class KafkaAdmin(Protocol):
    """The cluster questions (and the offsets of an idle group) the tools need."""

    def topics(self) -> list[str]: ...

    def topic_exists(self, topic: str) -> bool: ...

    def watermarks(self, topic: str) -> dict[int, Watermarks]:
        """Every partition of `topic`, once each has a leader."""
        ...

    def topic_ids(self, topics: Sequence[str]) -> dict[str, str]:
        """The Kafka topic id of each of `topics` that exists (a re-created topic has a new one)."""
        ...

    def committed(
        self, group: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        """The group's committed offset per partition (None: never)."""
        ...

    def offsets_for_times(self, topic: str, timestamp_ms: int) -> dict[int, int]:
        """Per partition, the first offset at or after `timestamp_ms` (else the high watermark)."""
        ...

    def active_members(self, group: str) -> list[str]:
        """``client_id@host`` per member; empty when nobody consumes."""
        ...

    def alter_committed(
        self,
        group: str,
        offsets: Mapping[TopicPartition, int],
        metadata: Mapping[TopicPartition, str] | None = None,
    ) -> dict[TopicPartition, str]:
        """Set the group's committed offsets (with commit `metadata`); the failed ones, with why."""
        ...

    def delete_group(self, group: str) -> bool:
        """Delete the group and its offsets: True, or False when there was none; `KafkaException`
        (``NON_EMPTY_GROUP``) while it has members."""
        ...


class AdminFactory(Protocol):
    """Makes a `KafkaAdmin` from a client config; `timeout_s` bounds each of its requests."""

    def __call__(self, config: Mapping[str, Any], *, timeout_s: float = ...) -> KafkaAdmin: ...


def _kafka_error(exc: BaseException) -> Any:
    return exc.args[0] if exc.args else None


def _code(exc: BaseException) -> Any:
    return getattr(_kafka_error(exc), "code", lambda: None)()


class ConfluentKafkaAdmin:
    """`KafkaAdmin` over ``AdminClient``; `clock` and `sleep` are injectable for tests."""

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        timeout_s: float = KAFKA_TIMEOUT_S,
        client_factory: Callable[[dict[str, Any]], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = (client_factory or AdminClient)(routed(config))
        self._timeout_s = timeout_s
        self._clock = clock
        self._sleep = sleep

    def _metadata(self) -> Any:
        return self._client.list_topics(timeout=self._timeout_s)

    def topics(self) -> list[str]:
        return sorted(self._metadata().topics)

    def topic_exists(self, topic: str) -> bool:
        # all topics, never one by name: asking for one by name may auto-create it
        described = self._metadata().topics.get(topic)
        return described is not None and described.error is None

    def wait_for_leaders(self, topic: str, deadline: Deadline) -> list[int]:
        """The partitions of `topic` once all have a leader; `TransientError` at `deadline`."""
        while True:
            described = self._metadata().topics.get(topic)
            if described is not None and described.error is None and described.partitions:
                leaderless = [
                    p
                    for p, meta in described.partitions.items()
                    if meta.leader < 0 or meta.error is not None
                ]
                if not leaderless:
                    return sorted(described.partitions)
                why = f"partitions {sorted(leaderless)} have no leader"
            else:
                why = "not in the cluster's metadata"
            if deadline.expired():
                raise TransientError(ErrorCode.KAFKA_NO_LEADER, f"topic {topic}: {why}")
            self._sleep(min(_RETRY_PAUSE_S, deadline.remaining()))

    def topic_ids(self, topics: Sequence[str]) -> dict[str, str]:
        if not topics:
            return {}
        futures = self._client.describe_topics(
            TopicCollection(list(topics)), request_timeout=self._timeout_s
        )
        ids: dict[str, str] = {}
        for topic, future in futures.items():
            try:
                ids[topic] = str(future.result().topic_id)
            except KafkaException as exc:
                if _code(exc) != KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise
        return ids

    def watermarks(self, topic: str) -> dict[int, Watermarks]:
        deadline = Deadline(self._clock, self._timeout_s)
        partitions = self.wait_for_leaders(topic, deadline)
        low = self._list_offsets(topic, partitions, _SPEC.earliest(), deadline)
        high = self._list_offsets(topic, partitions, _SPEC.latest(), deadline)
        return {p: Watermarks(low[p], high[p]) for p in partitions}

    def offsets_for_times(self, topic: str, timestamp_ms: int) -> dict[int, int]:
        deadline = Deadline(self._clock, self._timeout_s)
        partitions = self.wait_for_leaders(topic, deadline)
        found = self._list_offsets(topic, partitions, _SPEC.for_timestamp(timestamp_ms), deadline)
        later = [p for p, offset in found.items() if offset < 0]  # no message that recent
        if later:
            found.update(self._list_offsets(topic, later, _SPEC.latest(), deadline))
        return found

    def _list_offsets(
        self, topic: str, partitions: Sequence[int], spec: Any, deadline: Deadline
    ) -> dict[int, int]:
        wanted = list(partitions)
        out: dict[int, int] = {}
        while True:
            futures = self._client.list_offsets(
                {KafkaTopicPartition(topic, p): spec for p in wanted},
                isolation_level=IsolationLevel.READ_COMMITTED,
                request_timeout=max(1.0, deadline.remaining()),
            )
            retry: list[int] = []
            last: Any = None
            for tp, future in futures.items():
                try:
                    out[tp.partition] = int(future.result().offset)
                except KafkaException as exc:
                    err = _kafka_error(exc)
                    if not _leadership_error(err):
                        raise
                    retry.append(tp.partition)
                    last = err
            if not retry:
                return out
            if deadline.expired():
                raise TransientError(
                    ErrorCode.KAFKA_NO_LEADER, f"topic {topic}: partitions {sorted(retry)}: {last}"
                )
            wanted = retry
            self._sleep(min(_RETRY_PAUSE_S, deadline.remaining()))

    def committed(
        self, group: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        if not partitions:
            return {}
        asked = [KafkaTopicPartition(t, p) for t, p in partitions]
        answered = self._of_group(self._client.list_consumer_group_offsets, group, asked)
        return {(tp.topic, tp.partition): tp.offset if tp.offset >= 0 else None for tp in answered}

    def alter_committed(
        self,
        group: str,
        offsets: Mapping[TopicPartition, int],
        metadata: Mapping[TopicPartition, str] | None = None,
    ) -> dict[TopicPartition, str]:
        if not offsets:
            return {}
        notes = metadata or {}
        asked = [
            KafkaTopicPartition(t, p, o, metadata=notes[(t, p)])
            if (t, p) in notes
            else KafkaTopicPartition(t, p, o)
            for (t, p), o in offsets.items()
        ]
        answered = self._of_group(self._client.alter_consumer_group_offsets, group, asked)
        return {(tp.topic, tp.partition): tp.error.str() for tp in answered if tp.error is not None}

    def _of_group(self, call: Any, group: str, partitions: list[Any]) -> Any:
        """The partitions in the answer to `call` (an ``AdminClient`` method) about `group`."""
        futures = call(
            [ConsumerGroupTopicPartitions(group, partitions)], request_timeout=self._timeout_s
        )
        return futures[group].result().topic_partitions

    def delete_group(self, group: str) -> bool:
        futures = self._client.delete_consumer_groups([group], request_timeout=self._timeout_s)
        try:
            futures[group].result()
        except KafkaException as exc:
            if _code(exc) == KafkaError.GROUP_ID_NOT_FOUND:
                return False
            raise
        return True

    def active_members(self, group: str) -> list[str]:
        described = self._client.describe_consumer_groups([group], request_timeout=self._timeout_s)
        description = described[group].result()
        members = [f"{m.client_id}@{m.host}" for m in description.members]
        state = getattr(description.state, "name", str(description.state))
        if not members and state in _ACTIVE_STATES:
            members = [f"(group state {state})"]
        return members


_LEADERSHIP_MOVING: Final = (
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._NOENT,  # librdkafka: "no leaders found" for the partitions asked
)


def _leadership_error(err: Any) -> bool:
    """Leadership is still moving or being set up: ask again."""
    return hasattr(err, "code") and bool(err.code() in _LEADERSHIP_MOVING or err.retriable())
