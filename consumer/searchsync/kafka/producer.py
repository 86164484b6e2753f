"""Producing with an acknowledgement: `AcknowledgedProducer.send` (asyncio) and `produce_and_wait`
(blocking) resolve once every in-sync replica has the message (``acks=all``, idempotence on). Errors
are Kafka's own (`BufferError`, `KafkaException`, `DeliveryFailed`)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol, cast

import confluent_kafka

from searchsync.clock import Deadline
from searchsync.errors import DeliveryFailed, DeliveryTimeout
from searchsync.kafka.config import routed

PRODUCER_GUARANTEES: Final[Mapping[str, str | bool]] = {"acks": "all", "enable.idempotence": True}

DeliveryCallback = Callable[[Any, Any], None]
"""``on_delivery(err, msg)``: `err` is a KafkaError or None once the broker answered."""

Headers = list[tuple[str, bytes]]


class ProducerPort(Protocol):
    def produce(
        self,
        topic: str,
        value: bytes | None = ...,
        key: bytes | None = ...,
        *,
        partition: int = ...,
        headers: Headers | None = ...,
        on_delivery: DeliveryCallback | None = ...,
    ) -> None: ...

    def poll(self, timeout: float = ...) -> int: ...

    def flush(self, timeout: float = ...) -> int: ...


ProducerFactory = Callable[[dict[str, Any]], ProducerPort]


def kafka_producer(config: dict[str, Any]) -> ProducerPort:
    return cast(ProducerPort, confluent_kafka.Producer(routed(config)))


def acknowledged(config: Mapping[str, Any], factory: ProducerFactory | None = None) -> ProducerPort:
    return (factory or kafka_producer)({**config, **PRODUCER_GUARANTEES})


class AcknowledgedProducer:
    """Async produce; a daemon thread polls and hands each delivery to the loop."""

    def __init__(
        self, config: Mapping[str, Any], *, name: str, factory: ProducerFactory | None = None
    ) -> None:
        self._name = name
        self._producer = acknowledged(config, factory)
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None

    async def send(self, topic: str, value: bytes, key: bytes | None, *, headers: Headers) -> None:
        """Produce and wait for the acknowledgement. `BufferError` or `KafkaException` when it
        cannot be queued, `DeliveryFailed` when refused."""
        if self._stop.is_set():
            raise RuntimeError(f"{self._name}: send after close")
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[None] = loop.create_future()

        def on_delivery(err: Any, _msg: Any) -> None:  # runs on the poll thread
            # RuntimeError: the loop is gone, so nobody waits for this answer any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, answered, err)

        self._producer.produce(topic, value, key, headers=headers, on_delivery=on_delivery)
        if self._poller is None:
            self._poller = threading.Thread(
                target=self._poll_until_stopped, name=f"{self._name}-poll", daemon=True
            )
            self._poller.start()
        await answered

    async def close(self, flush_timeout: float) -> int:
        """Stop polling and flush; how many messages are still unacknowledged."""
        self._stop.set()
        if self._poller is not None:
            await asyncio.to_thread(self._poller.join)
        return await asyncio.to_thread(self._producer.flush, flush_timeout)

    def _poll_until_stopped(self) -> None:
        while not self._stop.is_set():
            self._producer.poll(0.1)


def _settle(future: asyncio.Future[None], err: Any) -> None:
    if future.done():  # the sender was cancelled; the message may still have landed
        return
    if err is None:
        future.set_result(None)
    else:
        future.set_exception(DeliveryFailed(err))


def produce_and_wait(
    producer: ProducerPort,
    topic: str,
    value: bytes | None,
    key: bytes | None,
    *,
    partition: int,
    headers: Headers,
    timeout_s: float,
    clock: Callable[[], float] = time.monotonic,
) -> int | None:
    """Blocking produce to one partition; the offset the broker gave it (None if unreported).
    `DeliveryFailed` when refused, `DeliveryTimeout` after `timeout_s`."""
    answers: list[tuple[Any, Any]] = []  # (err, msg) once the broker answered
    producer.produce(
        topic,
        value,
        key,
        partition=partition,
        headers=headers,
        on_delivery=lambda err, msg: answers.append((err, msg)),
    )
    deadline = Deadline(clock, timeout_s)
    while not answers and not deadline.expired():
        producer.poll(min(0.1, deadline.remaining()))
    if not answers:
        raise DeliveryTimeout(f"no acknowledgement within {timeout_s}s")
    err, msg = answers[0]
    if err is not None:
        raise DeliveryFailed(err)
    offset = getattr(msg, "offset", None)
    written = offset() if callable(offset) else None
    return written if isinstance(written, int) and written >= 0 else None
