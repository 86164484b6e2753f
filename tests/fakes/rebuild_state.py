"""`RebuildStateStore` (``search_rebuild_state``) in memory."""

from __future__ import annotations

from searchsync.ops.rebuild.records import RebuildRecord, unfinished_exists

__all__ = ["FakeRebuildState"]


class FakeRebuildState:
    """`records` by rebuild id; `saves` lists every stored record, in order."""

    def __init__(self) -> None:
        self.records: dict[str, RebuildRecord] = {}
        self.saves: list[RebuildRecord] = []

    async def unfinished(self, alias: str) -> RebuildRecord | None:
        found = [r for r in self.records.values() if r.alias == alias and not r.status.finished]
        return found[0] if found else None

    async def create(self, record: RebuildRecord) -> None:
        if await self.unfinished(record.alias) is not None:
            raise unfinished_exists(record.alias)
        self.records[record.rebuild_id] = record
        self.saves.append(record)

    async def save(self, record: RebuildRecord) -> None:
        if record.rebuild_id not in self.records:
            raise KeyError(record.rebuild_id)
        self.records[record.rebuild_id] = record
        self.saves.append(record)
