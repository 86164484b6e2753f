"""The repair's content check projects through the same reads as the consumer: a child row or a
looked-up row that changed without the document being projected again (a lost write of the
aggregate) is content drift, found by the wheel and healed through the consumer."""

from __future__ import annotations

from typing import Any

from searchsync.examples import article
from searchsync.ops.repair.model import FindingKind
from searchsync.projection import ProjectorRegistry
from test_repair_wheel import World

from tests.fakes.search_index import InMemoryIndex
from tests.fakes.search_state import StoredDoc


class ArticleWorld(World):
    """`World` with the example article (tags as children, the author as a lookup)."""

    def __init__(self) -> None:
        super().__init__(m=2)
        self.registry = ProjectorRegistry()
        self.projector = article.projector()
        self.registry.register(self.projector)
        self.index = InMemoryIndex()
        self.index.given_index("article_v1", self.projector.mapping)
        self.index.given_alias("article", "article_v1")
        self.docs = self.index.indices["article_v1"].docs
        self.index_side = self.index

    async def article(self, i: str, tags: list[str], author: str | None) -> None:
        row: dict[str, Any] = {"id": i, "title": f"t {i}", "body": "b", "author_id": author,
                               "revision": 2, "deleted_at": None}  # fmt: skip
        self.truth.put(row, table="article")
        for position, tag in enumerate(tags):
            self.tag(i, tag, position)
        await self.index_now(i)

    def tag(self, i: str, tag: str, position: int) -> None:
        self.truth.put_child({"article_id": i, "tag": tag, "position": position},
                             table="article_tag")  # fmt: skip

    async def index_now(self, i: str) -> None:
        """The document the consumer wrote from the truth as it is now."""
        row = (await self.truth.rows_by_id(self.projector, [i]))[i]
        self.docs[i] = StoredDoc(int(row["revision"]), dict(self.projector.project(row).body))

    async def projected(self, i: str) -> dict[str, Any]:
        row = (await self.truth.rows_by_id(self.projector, [i]))[i]
        return dict(self.projector.project(row).body)


async def test_drift_in_a_child_row_or_a_looked_up_row_is_found_and_healed() -> None:
    w = ArticleWorld()
    w.truth.put({"id": "u1", "name": "阿尔托莉雅", "revision": 1}, table="author")
    for n in range(6):
        await w.article(f"ok{n}", ["a", "b"], "u1" if n % 2 else None)
    await w.article("tagged", ["x", "y"], None)
    await w.article("authored", [], "u2")
    w.truth.put({"id": "u2", "name": "old", "revision": 1}, table="author")
    await w.index_now("authored")
    # the drift: rows changed at the same root revision, no document projected again
    w.truth.remove_children("article_tag", "article_id", "tagged")
    w.tag("tagged", "z", 0)
    w.truth.put({"id": "u2", "name": "new", "revision": 2}, table="author")
    report = await w.wheel().rotation()
    found = {f.id: f.kind for b in report.buckets for f in b.findings}
    assert found == {"tagged": FindingKind.CONTENT_DRIFT, "authored": FindingKind.CONTENT_DRIFT}
    await w.deliver()
    assert w.docs["tagged"].body == await w.projected("tagged")
    assert w.docs["tagged"].body["tags"] == ["z"]
    assert w.docs["authored"].body["author_name"] == "new"
    again = await w.wheel().rotation()
    assert again.counts() == {k.value: 0 for k in FindingKind}
