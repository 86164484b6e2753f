"""`LeaseStore` in memory, on a clock the test moves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from searchsync.ops.repair.lease import Holder


class FakeLeaseStore:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)
        self.leases: dict[str, tuple[str, datetime]] = {}
        self.fail_with: BaseException | None = None  # `take` raises it

    async def take(self, aggregate_type: str, holder: str, seconds: float) -> Holder | None:
        if self.fail_with is not None:
            raise self.fail_with
        current = self.leases.get(aggregate_type)
        if current is not None and current[0] != holder and current[1] > self.now:
            return Holder(aggregate_type, *current)
        self.leases[aggregate_type] = (holder, self.now + timedelta(seconds=seconds))
        return None

    async def release(self, aggregate_type: str, holder: str) -> None:
        current = self.leases.get(aggregate_type)
        if current is not None and current[0] == holder:
            self.leases[aggregate_type] = (holder, self.now)
