"""The pipeline's tunables, built once from the config (`searchsync.app`) and passed in."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

__all__ = ["PipelineOptions"]


@dataclass(frozen=True, slots=True)
class PipelineOptions:
    group_id: str
    known_types: Collection[str]
    max_event_bytes: int
    consume_batch: int = 500
    consume_timeout_s: float = 0.1
    max_batch_works: int = 500
    max_concurrent_batches: int = 2
    commit_interval_s: float = 1.0
    lag_interval_s: float = 15.0
    revoke_drain_s: float = 10.0
    state_flush_interval_s: float = 1.0
