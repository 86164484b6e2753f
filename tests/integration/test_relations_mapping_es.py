"""The wiki_page mapping on a real Elasticsearch: relation types are open-ended keyword fields
under `relations`, and the root still refuses unknown fields (docs/design.md, "The wiki_page
document"). Each test creates its own uuid-named index and deletes it afterwards."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from elasticsearch import AsyncElasticsearch, BadRequestError
from searchsync.examples import article
from searchsync.projection import Document, Projector, wiki_page

from tests.integration.conftest import ES_URL

pytestmark = pytest.mark.integration


@pytest.fixture
async def es() -> AsyncIterator[AsyncElasticsearch]:
    client = AsyncElasticsearch(ES_URL, request_timeout=30)
    try:
        yield client
    finally:
        await client.close()


async def throwaway_index(es: AsyncElasticsearch, projector: Projector) -> str:
    name = f"searchsync_test_mapping_{uuid.uuid4().hex[:12]}"
    mapping = projector.mapping
    await es.indices.create(index=name, settings=mapping["settings"], mappings=mapping["mappings"])
    return name


async def put(es: AsyncElasticsearch, index: str, doc: Document) -> None:
    await es.index(
        index=index,
        id=doc.doc_id,
        document=doc.body,
        version=doc.source_revision,
        version_type="external",
        refresh=True,
    )


async def ids_matching(es: AsyncElasticsearch, index: str, query: dict[str, Any]) -> list[str]:
    resp: Any = await es.search(index=index, query=query)
    return sorted(hit["_id"] for hit in resp["hits"]["hits"])


def page(page_id: str, relations: dict[str, Any]) -> Document:
    row = {
        "id": page_id,
        "title": "齐夏人物分析",
        "content": "正文",
        "relations_json": json.dumps(relations, ensure_ascii=False),
        "revision": 42,
        "deleted_at": None,
    }
    return wiki_page.projector().project(row)


async def test_a_term_query_on_a_relation_type_finds_the_page(es: AsyncElasticsearch) -> None:
    index = await throwaway_index(es, wiki_page.projector())
    try:
        qixia = {"entity_id": "character_xxx", "entity_type": "character", "title": "齐夏"}
        place = {"entity_id": "place_1", "entity_type": "place"}
        await put(es, index, page("page_001", {"RELATED_CHARACTER": [qixia]}))
        await put(es, index, page("page_002", {"RELATED_PLACE": [place], "MENTIONS": [qixia]}))
        await put(es, index, page("page_003", {"RELATED_CHARACTER": []}))

        by_type = {"term": {"relations.RELATED_CHARACTER": "character:character_xxx"}}
        assert await ids_matching(es, index, by_type) == ["page_001"]
        any_type = {"term": {"relation_target_ids": "character:character_xxx"}}
        assert await ids_matching(es, index, any_type) == ["page_001", "page_002"]
        assert await ids_matching(es, index, {"exists": {"field": "relations.MENTIONS"}}) == [
            "page_002"
        ]

        mapping: Any = await es.indices.get_mapping(index=index)
        relations = mapping[index]["mappings"]["properties"]["relations"]["properties"]
        assert {name: field["type"] for name, field in relations.items()} == {
            "MENTIONS": "keyword",
            "RELATED_CHARACTER": "keyword",
            "RELATED_PLACE": "keyword",
        }
        stored: Any = await es.get(index=index, id="page_001")
        assert stored["_source"] == page("page_001", {"RELATED_CHARACTER": [qixia]}).body
    finally:
        await es.indices.delete(index=index)


async def test_the_root_still_refuses_an_unknown_field(es: AsyncElasticsearch) -> None:
    index = await throwaway_index(es, wiki_page.projector())
    try:
        body = {**page("page_001", {}).body, "unexpected": "x"}
        with pytest.raises(BadRequestError) as caught:
            await es.index(index=index, id="page_001", document=body)
        assert caught.value.error == "strict_dynamic_mapping_exception"
        # an object under a relation type is not a list of targets: refused too
        nested = {**page("page_002", {}).body, "relations": {"R": {"entity_id": "x"}}}
        with pytest.raises(BadRequestError):
            await es.index(index=index, id="page_002", document=nested)
    finally:
        await es.indices.delete(index=index)


TAGS = ("rules", "游戏")


async def test_the_article_example_mapping_takes_its_documents(es: AsyncElasticsearch) -> None:
    index = await throwaway_index(es, article.projector())
    try:
        row = {
            "id": "a1",
            "title": "终焉之地",
            "body": "正文",
            "author_id": "u1",
            "revision": 2,
            "deleted_at": None,
            "tags": [{"article_id": "a1", "tag": t, "position": i} for i, t in enumerate(TAGS)],
            "author": {"id": "u1", "name": "阿尔托莉雅"},
        }
        await put(es, index, article.projector().project(row))
        assert await ids_matching(es, index, {"term": {"tags": "游戏"}}) == ["a1"]
        by_author = {"term": {"author_name.keyword": "阿尔托莉雅"}}
        assert await ids_matching(es, index, by_author) == ["a1"]
    finally:
        await es.indices.delete(index=index)
