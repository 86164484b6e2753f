"""Adaptive chunk size: ``next = clip(current * target / actual, min, max)``, each step limited
to a factor `max_step` either way so that one slow or fast chunk cannot swing the size from one
bound to the other. Used by the rebuild's backfill and the repair's scans."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(slots=True)
class ChunkController:
    """The size of the next chunk, from the latency of the last one; `minimum <= current <=
    maximum` always holds. A latency of 0 (or less) counts as much faster than `target_s`.
    `quantum` (1: off) rounds a new size of at least `quantum` to the nearest multiple of it
    (whole bulks), within the step limit and never past the current size."""

    minimum: int
    maximum: int
    target_s: float
    current: int
    max_step: float = 2.0
    quantum: int = 1

    def __post_init__(self) -> None:
        if self.minimum < 1 or self.maximum < self.minimum:
            raise ValueError(f"want 1 <= minimum <= maximum, got {self.minimum}, {self.maximum}")
        if not (math.isfinite(self.target_s) and self.target_s > 0):
            raise ValueError(f"target_s must be a positive number, got {self.target_s}")
        if not (math.isfinite(self.max_step) and self.max_step > 1):
            raise ValueError(f"max_step must be a number > 1, got {self.max_step}")
        if self.quantum < 1:
            raise ValueError(f"quantum must be >= 1, got {self.quantum}")
        self.current = self._clip(self.current)

    def observe(self, actual_s: float) -> int:
        """Record the latency of a chunk of `current` rows; return the next size."""
        if not math.isfinite(actual_s) or actual_s <= 0:
            ratio = self.max_step
        else:
            ratio = min(self.max_step, max(1 / self.max_step, self.target_s / actual_s))
        size, q = round(self.current * ratio), self.quantum
        if q > 1 and size >= q:  # the nearest whole quanta, not past the current size or a step
            snapped = round(size / q) * q
            if size > self.current:
                size = min(max(self.current, snapped), math.floor(self.current * self.max_step))
            elif size < self.current:
                size = max(min(self.current, snapped), math.ceil(self.current / self.max_step))
        self.current = self._clip(size)
        return self.current

    def _clip(self, size: int) -> int:
        return max(self.minimum, min(self.maximum, size))
