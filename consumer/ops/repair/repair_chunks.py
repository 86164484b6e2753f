"""The repair's adaptive page size (docs/design.md, "Repair"):

    next = clip(current * target / actual, min, max)

with the step also bounded by `max_step` (x// per page) so one slow page does not collapse the
size. Kept apart from the rebuild's controller under its own name; the two may merge later.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RepairChunkController"]


@dataclass(slots=True)
class RepairChunkController:
    current: int
    target_s: float
    minimum: int
    maximum: int
    max_step: float = 4.0

    def __post_init__(self) -> None:
        if not 1 <= self.minimum <= self.maximum:
            raise ValueError("want 1 <= minimum <= maximum")
        if self.target_s <= 0 or self.max_step < 1:
            raise ValueError("want target_s > 0 and max_step >= 1")
        self.current = min(max(self.current, self.minimum), self.maximum)

    def observe(self, actual_s: float) -> int:
        """Feed one page's latency; return the next page size."""
        ratio = self.target_s / max(actual_s, 1e-6)
        ratio = min(max(ratio, 1.0 / self.max_step), self.max_step)
        self.current = int(min(max(round(self.current * ratio), self.minimum), self.maximum))
        return self.current
