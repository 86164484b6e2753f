"""Dead-lettering: the one DLQ budget, and sends whose positions finish on the broker's ack
(docs/design.md, invariant 5). A refused send is retried with backoff while the pipeline runs; a
spent budget is fatal (invariant 10)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from searchsync.clock import utc_now
from searchsync.dlq.record import DlqBudget, DlqProducer, DlqRecord
from searchsync.errors import DlqBudgetExceeded, ErrorCode, TransientError
from searchsync.observability.metrics import Metrics
from searchsync.stream.retry import RetryPolicy
from searchsync.stream.work import Work
from searchsync.stream.work_state import WorkState
from searchsync.types import RawMessage

log = logging.getLogger(__name__)

SEND_RETRY_CAP_S = 30.0  # a refused dead letter is sent again at least this often


class DeadLetters:
    """Sends dead letters in tasks of their own; `fatal` is set when the budget is spent."""

    def __init__(
        self,
        *,
        dlq: DlqProducer,
        budget: DlqBudget,
        state: WorkState,
        metrics: Metrics,
        retry: RetryPolicy,
        group_id: str,
    ) -> None:
        self._dlq = dlq
        self._budget = budget
        self._state = state
        self._metrics = metrics
        self._retry = retry
        self._group_id = group_id
        self._wake = asyncio.Event()
        self._stopping = False
        self.tasks: set[asyncio.Task[None]] = set()
        self.fatal: DlqBudgetExceeded | None = None

    def stop(self) -> None:
        """Shutting down: a refused send is not tried again."""
        self._stopping = True
        self._wake.set()

    def send(
        self,
        positions: Sequence[RawMessage],
        code: ErrorCode,
        message: str,
        work: Work | None = None,
    ) -> None:
        """Dead-letter the messages of `work` (None: a poison message, not decoded, one
        attempt); each position finishes only on the ack."""
        try:
            for _ in positions:
                self._budget.record_dead()
        except DlqBudgetExceeded as exc:
            log.error(
                "DLQ error budget exceeded: stopping the consumer", extra={"reason": str(exc)}
            )
            self.fatal = exc
            self._metrics.dlq_budget_spent()
            return
        task = asyncio.create_task(self._send(positions, code, message, work))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _send(
        self,
        positions: Sequence[RawMessage],
        code: ErrorCode,
        message: str,
        work: Work | None,
    ) -> None:
        now = utc_now()
        for i, pos in enumerate(positions):
            if not self._state.pending(pos):  # the partition was revoked meanwhile
                continue
            event = None if work is None else work.events[i]
            record = DlqRecord.for_message(
                topic=pos.topic,
                partition=pos.partition,
                offset=pos.offset,
                key=pos.key,
                value=pos.value,
                consumer_group=self._group_id,
                error_code=code.value,
                error_message=message,
                attempts=1 if work is None else work.attempts,
                first_failed_at=now,
                last_failed_at=now,
                event=event,
                projection_schema_version=work.schema_version if work else None,
            )
            if not await self._deliver(record, pos.key):
                return
            self._metrics.dead(event.aggregate_type if event else "unknown", code)
            if event is not None and work is not None:
                self._metrics.event_outcome(event.aggregate_type, "dead_lettered")
                work.log_outcome(log, event, pos, "dead_lettered", code, message)
            else:
                log.warning(
                    "poison message dead-lettered",
                    extra={
                        "topic": pos.topic,
                        "partition": pos.partition,
                        "offset": pos.offset,
                        "error_code": code,
                        "error_message": message,
                    },
                )
            self._state.acked(pos)

    async def _deliver(self, record: DlqRecord, key: bytes | None) -> bool:
        """Send until acknowledged (True), or shutdown stops trying (False)."""
        attempt = 0
        while True:
            try:
                await self._dlq.send(record, key)
                return True
            except TransientError as exc:
                attempt += 1
                if self._stopping:
                    log.warning("DLQ send failed during shutdown; offset stays uncommitted")
                    return False
                log.warning("DLQ send failed; retrying", extra={"error": exc.message})
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    delay = min(self._retry.delay(attempt), SEND_RETRY_CAP_S)
                    await asyncio.wait_for(self._wake.wait(), delay)
