"""`searchsync index list / rollback / drop` on the real Elasticsearch, run as an operator would."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from searchsync.config import load_settings
from searchsync.projection import default_registry
from searchsync.search.client import make_es_client
from searchsync.search.elasticsearch import EsIndexAdmin

from tests.integration.conftest import ES_URL
from tests.integration.test_cli_real import _ok_json, _searchsync
from tests.integration.test_cli_real import prefix as prefix  # the fixture: unique, cleaned up

pytestmark = pytest.mark.integration


def _listing(env: dict[str, str]) -> dict[str, Any]:
    [listing] = _ok_json(_searchsync("index", "list", "--type", "wiki_page", "--json", env=env))
    return {"write": listing["write_index"], **{r["name"]: r for r in listing["indices"]}}


async def _next_version_behind_the_alias(prefix: str, docs_in_v1: int) -> None:
    """What a rebuild with a new schema version leaves: v2 (schema + 1) written to, v1 kept."""
    settings = load_settings(
        {"SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": prefix, "SEARCHSYNC_ELASTICSEARCH_HOSTS": ES_URL}
    )
    alias = settings.alias("wiki_page")
    projector = default_registry().get("wiki_page")
    es = make_es_client(settings)
    try:
        for i in range(docs_in_v1):
            row = {
                "id": f"p{i}",
                "title": f"t{i}",
                "content": "c",
                "relations_json": "{}",
                "revision": 1,
                "deleted_at": None,
            }
            doc = projector.project(row)
            await es.index(index=f"{alias}_v1", id=doc.doc_id, document=doc.body, refresh=True)
        admin = EsIndexAdmin(es)
        meta = {"projection_schema_version": projector.schema_version + 1}
        await admin.create_index(f"{alias}_v2", projector.mapping, meta=meta)
        await admin.swap_alias(alias, old=f"{alias}_v1", new=f"{alias}_v2")
    finally:
        await es.close()


def test_list_rollback_and_drop_on_elasticsearch(prefix: str) -> None:
    env = {"SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": prefix}
    alias = f"{prefix}_wiki_page"
    v1, v2 = f"{alias}_v1", f"{alias}_v2"
    own = default_registry().get("wiki_page").schema_version
    _ok_json(_searchsync("index", "init", "--json", env=env))
    asyncio.run(_next_version_behind_the_alias(prefix, docs_in_v1=3))

    listed = _listing(env)
    assert listed["write"] == v2
    assert (listed[v1]["docs"], listed[v1]["schema_version"], listed[v1]["aliased"]) == (
        3,
        own,
        False,
    )
    assert (listed[v2]["schema_version"], listed[v2]["is_write_index"]) == (own + 1, True)

    refused = _searchsync("index", "drop", v2, "--execute", env=env)
    assert refused.returncode == 1 and "writes to" in refused.stderr

    plan = _ok_json(_searchsync("index", "rollback", "--json", env=env))  # a plan by default
    assert (plan["from"], plan["to"], plan["dry_run"]) == (v2, v1, True)
    assert _listing(env)["write"] == v2
    done = _ok_json(_searchsync("index", "rollback", "--execute", "--json", env=env))
    assert (done["from"], done["to"]) == (v2, v1)
    listed = _listing(env)
    assert listed["write"] == v1 and not listed[v2]["aliased"]

    dry = _ok_json(_searchsync("index", "drop", v2, "--json", env=env))  # a plan by default
    assert (dry["index"], dry["docs"], dry["dry_run"]) == (v2, 0, True)
    assert v2 in _listing(env)
    dropped = _ok_json(_searchsync("index", "drop", v2, "--execute", "--json", env=env))
    assert dropped["index"] == v2 and not dropped["dry_run"]
    listed = _listing(env)
    assert v2 not in listed and listed["write"] == v1 and listed[v1]["docs"] == 3
    refused = _searchsync("index", "drop", v1, "--execute", env=env)
    assert refused.returncode == 1 and "writes to" in refused.stderr
