"""`GapAcks` in memory: the accepted history gaps, appended in order."""

from __future__ import annotations

from collections.abc import Sequence

from searchsync.mysql.lineage import GapAck


class FakeGapAcks:
    def __init__(self) -> None:
        self.acks: list[GapAck] = []

    async def record(self, acks: Sequence[GapAck]) -> None:
        self.acks.extend(acks)

    async def of_group(self, group: str) -> list[GapAck]:
        return [a for a in self.acks if a.group == group]
