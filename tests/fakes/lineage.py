"""`TopicLineage` in memory: the topic id each group reads, and the accepted changes."""

from __future__ import annotations

from collections.abc import Mapping


class FakeTopicLineage:
    def __init__(self) -> None:
        self.ids: dict[tuple[str, str], str] = {}
        self.accepted: list[
            tuple[str, str, str | None, str, str]
        ] = []  # group, topic, old, new, by

    async def recorded(self, group: str) -> dict[str, str]:
        return {t: i for (g, t), i in self.ids.items() if g == group}

    async def adopt(self, group: str, ids: Mapping[str, str]) -> None:
        for topic, topic_id in ids.items():
            self.ids.setdefault((group, topic), topic_id)

    async def accept(self, group: str, ids: Mapping[str, str], accepted_by: str) -> None:
        for topic, topic_id in sorted(ids.items()):
            old = self.ids.get((group, topic))
            self.accepted.append((group, topic, old, topic_id, accepted_by))
            self.ids[(group, topic)] = topic_id
