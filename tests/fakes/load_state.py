"""`LoadStateStore` (``search_load_state``) in memory."""

from __future__ import annotations

from searchsync.ops.load.parts import LoadRecord

__all__ = ["FakeLoadState"]


class FakeLoadState:
    """`records` by (load key, part); `saves` lists every stored record, in order."""

    def __init__(self) -> None:
        self.records: dict[tuple[str, int], LoadRecord] = {}
        self.saves: list[LoadRecord] = []

    async def parts(self, load_key: str) -> list[LoadRecord]:
        return [r for (k, _), r in sorted(self.records.items()) if k == load_key]

    async def plan(self, records: list[LoadRecord]) -> bool:
        if any((r.load_key, r.part) in self.records for r in records):
            return False
        self.records.update({(r.load_key, r.part): r for r in records})
        return True

    async def save(self, record: LoadRecord) -> None:
        if (record.load_key, record.part) not in self.records:
            raise KeyError((record.load_key, record.part))
        self.records[(record.load_key, record.part)] = record
        self.saves.append(record)
