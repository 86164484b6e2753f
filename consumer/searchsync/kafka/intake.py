"""The Kafka side of the pipeline: a confluent-kafka consumer driven from asyncio, every librdkafka
call on ONE dedicated thread. The revoke callback has the loop drain the revoked partitions and
commits the offsets it gets back before they go (docs/design.md, invariant 5); a partition below the
log start is kept but never read (`kafka.gaps`)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ParamSpec, Protocol, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from searchsync.kafka.config import routed
from searchsync.kafka.gaps import GapBoard, GapGuard
from searchsync.kafka.lineage import LineageCheck
from searchsync.types import RawMessage, TopicPartition

log = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")


class RebalanceListener(Protocol):
    """What the pipeline does when partitions come and go; `revoking` runs on the loop while the
    consumer thread waits, and returns the offsets to commit."""

    def assigned(self, partitions: Sequence[TopicPartition]) -> None: ...

    async def revoking(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]: ...

    def revoked(self, partitions: Sequence[TopicPartition], *, lost: bool) -> None: ...


class KafkaIntake:
    """Consume, pause/resume, commit and close, each on the consumer's own thread."""

    def __init__(
        self,
        config: Mapping[str, Any],
        subscription: Sequence[str],
        listener: RebalanceListener,
        *,
        revoke_timeout_s: float,
        consumer_factory: Callable[[dict[str, Any]], Any] = Consumer,
        gaps: GapBoard | None = None,
        fresh_start: str = "earliest",
        lineage: LineageCheck | None = None,
    ) -> None:
        """`fresh_start`: where a partition without a committed offset starts; `gaps`: the blocked
        partitions; `lineage`: the group's topic ids against the cluster's."""
        self._config = dict(config)
        self._subscription = list(subscription)
        self._listener = listener
        self._revoke_timeout_s = revoke_timeout_s
        self._factory = consumer_factory
        self._executor = concurrent.futures.ThreadPoolExecutor(1, "searchsync-kafka")
        self._consumer: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self.guard = GapGuard(
            gaps or GapBoard(),
            self._config,
            fresh_start=fresh_start,
            timeout_s=revoke_timeout_s,
            lineage=lineage,
        )

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        await self._call(self._start)

    def _start(self) -> None:
        self._consumer = self._factory(routed(self._config))
        self._consumer.subscribe(
            self._subscription,
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )

    async def consume(self, max_messages: int, timeout_s: float) -> list[RawMessage]:
        """One batched consume; partition errors are logged, fatal ones raised."""
        return await self._call(self._consume, max_messages, timeout_s)

    def _consume(self, max_messages: int, timeout_s: float) -> list[RawMessage]:
        out: list[RawMessage] = []
        for m in self._consumer.consume(num_messages=max_messages, timeout=timeout_s):
            err = m.error()
            if err is None:
                out.append(_raw(m))
            elif err.fatal():
                raise KafkaException(err)
            elif err.code() == KafkaError._AUTO_OFFSET_RESET:
                self.guard.out_of_range(self._consumer, m)
            else:
                log.warning("kafka consume error", extra={"kafka_error": str(err)})
        return out

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, bool]:
        """Synchronous commit of `offsets` (next to read); success per partition."""
        if not offsets:
            return {}
        return await self._call(_commit_sync, self._consumer, dict(offsets))

    async def pause(self, partitions: Sequence[TopicPartition]) -> None:
        if partitions:
            await self._call(self._consumer.pause, [KafkaTopicPartition(*tp) for tp in partitions])

    async def resume(self, partitions: Sequence[TopicPartition]) -> None:
        if partitions:
            await self._call(self._consumer.resume, [KafkaTopicPartition(*tp) for tp in partitions])

    async def high_watermarks(
        self, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """End offsets as of the last fetch (no broker round trip); partitions not fetched yet are
        left out."""
        return await self._call(self._high_watermarks, list(partitions))

    def _high_watermarks(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for t, p in partitions:
            try:
                _low, high = self._consumer.get_watermark_offsets(
                    KafkaTopicPartition(t, p), cached=True
                )
            except KafkaException:
                continue
            if high >= 0:
                out[(t, p)] = int(high)
        return out

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._consumer is not None:
                await self._call(self._consumer.close)
        finally:
            self._executor.shutdown(wait=False)

    def _on_assign(self, consumer: Any, partitions: list[KafkaTopicPartition]) -> None:
        """The rebalance callbacks run on the consumer thread, inside consume() or close()."""
        tps = self.guard.admit(consumer, [(tp.topic, tp.partition) for tp in partitions])
        log.info("partitions assigned", extra={"partitions": [f"{t}[{p}]" for t, p in tps]})
        self._to_loop(self._listener.assigned, tps)

    def _on_revoke(self, consumer: Any, partitions: list[KafkaTopicPartition]) -> None:
        tps, never = self.guard.split(partitions)
        log.info("partitions revoked", extra={"partitions": [f"{t}[{p}]" for t, p in tps]})
        offsets: dict[TopicPartition, int] = {}
        if self._loop is not None and not self._loop.is_closed():
            fut = asyncio.run_coroutine_threadsafe(self._listener.revoking(tps), self._loop)
            try:
                offsets = fut.result(timeout=self._revoke_timeout_s)
            except Exception:  # the drain failed or timed out: commit nothing new, lose nothing
                log.exception("draining revoked partitions failed; their offsets stay uncommitted")
                fut.cancel()
        if offsets:
            results = _commit_sync(consumer, offsets)
            failed = [tp for tp, ok in results.items() if not ok]
            if failed:
                log.warning("commit on revoke failed", extra={"partitions": failed})
        self._let_go(consumer, tps, never, lost=False)

    def _on_lost(self, consumer: Any, partitions: list[KafkaTopicPartition]) -> None:
        # Lost partitions may already belong to another member: commit nothing for them.
        tps, never = self.guard.split(partitions)
        log.warning("partitions lost", extra={"partitions": [f"{t}[{p}]" for t, p in tps]})
        self._let_go(consumer, tps, never, lost=True)

    def _let_go(self, consumer: Any, tps: list[TopicPartition], never: bool, *, lost: bool) -> None:
        try:  # librdkafka keeps a pause across a revoke
            consumer.resume([KafkaTopicPartition(t, p) for t, p in tps])
        except KafkaException as exc:  # not assigned any more: nothing is paused either
            log.debug("resume on revoke failed", extra={"error": str(exc)})
        self.guard.unassign(consumer, tps, never)
        self._to_loop(lambda parts: self._listener.revoked(parts, lost=lost), tps)

    def _to_loop(
        self, fn: Callable[[list[TopicPartition]], None], tps: list[TopicPartition]
    ) -> None:
        if self._loop is None or self._loop.is_closed():
            return

        async def run() -> None:
            fn(tps)

        try:  # keep the order: the loop learns of the change before the next consume returns
            done = asyncio.run_coroutine_threadsafe(run(), self._loop)
            done.result(timeout=self._revoke_timeout_s)
        except TimeoutError:
            log.warning("rebalance listener did not run in time")

    async def _call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(*args, **kwargs))


def _raw(m: Message) -> RawMessage:
    ts_type, ts = m.timestamp()
    topic, partition, offset = m.topic(), m.partition(), m.offset()
    if topic is None or partition is None or offset is None:  # only error events lack them
        raise KafkaException(KafkaError(KafkaError._BAD_MSG, "message without a position"))
    return RawMessage(topic, partition, offset, m.key(), m.value(), ts if ts_type != 0 else None)


def _commit_sync(
    consumer: Any, offsets: Mapping[TopicPartition, int]
) -> dict[TopicPartition, bool]:
    tps = [KafkaTopicPartition(t, p, o) for (t, p), o in offsets.items()]
    try:
        results = consumer.commit(offsets=tps, asynchronous=False)
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError) and err.code() == KafkaError._NO_OFFSET:
            return dict.fromkeys(offsets, True)
        log.warning("commit failed", extra={"kafka_error": str(exc)})
        return dict.fromkeys(offsets, False)
    return {(tp.topic, tp.partition): tp.error is None for tp in results or []}
