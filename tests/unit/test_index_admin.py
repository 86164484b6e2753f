"""`EsIndexAdmin` over a stub client (request shapes, answers, errors), the shared error parser,
and `init_index` under a concurrent init. The behaviour itself is the contract's
(tests/contract), run on the fake and on a real node."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
from elasticsearch import ApiError, ConnectionError
from searchsync.errors import (
    AliasConflict,
    IndexAdminError,
    IndexExists,
    IndexMissing,
    TransientError,
)
from searchsync.search.admin import InitAction, init_index
from searchsync.search.elasticsearch import EsIndexAdmin
from searchsync.search.errors import EsError, es_error
from searchsync.search.port import IndexAdmin, IndexInfo, effective_write_index

from tests.contract.search_backend import MAPPING, FakeBackend


def api_error(status: int, body: Any) -> ApiError:
    meta = ApiResponseMeta(status, "1.1", HttpHeaders(), 0.0, NodeConfig("http", "localhost", 9200))
    return ApiError("message", meta, body)


def typed(status: int, error_type: str, reason: str = "why") -> ApiError:
    return api_error(status, {"error": {"type": error_type, "reason": reason}, "status": status})


class Response:
    def __init__(self, body: Any) -> None:
        self.body = body


class StubIndices:
    """Records every call; answers from `answers[method]` (an exception is raised)."""

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        self.answers = answers or {}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, method: str) -> Any:
        async def call(**kwargs: Any) -> Any:
            self.calls.append((method, kwargs))
            answer = self.answers.get(method, {})
            if isinstance(answer, Exception):
                raise answer
            return answer if isinstance(answer, bool) else Response(answer)

        return call


class StubClient:
    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        self.indices = StubIndices(answers)


def admin(answers: dict[str, Any] | None = None) -> tuple[EsIndexAdmin, StubIndices]:
    client = StubClient(answers)
    return EsIndexAdmin(cast(Any, client)), client.indices


# -- the error parser ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"error": {"type": "t", "reason": "r"}, "status": 400}, EsError(400, "t", "r")),
        ({"error": {"type": 3, "reason": None}}, EsError(400, None, None)),
        ({"error": "plain text"}, EsError(400, None, "plain text")),
        ("<html>proxy</html>", EsError(400, None, "message")),
    ],
)
def test_es_error_reads_every_shape(body: Any, expected: EsError) -> None:
    assert es_error(api_error(400, body)) == expected


# -- requests ------------------------------------------------------------------------------------


async def test_create_index_sends_body_meta_and_alias_in_one_call() -> None:
    es, calls = admin()
    body = {**MAPPING, "mappings": {**MAPPING["mappings"], "_meta": {"a": 1, "b": 1}}}
    await es.create_index("kb_page_v1", body, meta={"b": 2}, alias="kb_page")
    [(method, kwargs)] = calls.calls
    assert method == "create" and kwargs["index"] == "kb_page_v1"
    assert kwargs["settings"] == MAPPING["settings"]
    assert kwargs["mappings"] == {**MAPPING["mappings"], "_meta": {"a": 1, "b": 2}}
    assert kwargs["aliases"] == {
        "kb_page": {"is_write_index": True},
        "kb_page_live": {"is_write_index": False, "filter": {"term": {"is_deleted": False}}},
    }
    assert "_meta" not in MAPPING["mappings"]  # the caller's body is not changed


_LIVE_ALIAS = {"is_write_index": False, "filter": {"term": {"is_deleted": False}}}


@pytest.mark.parametrize("old_has_read_alias", [True, False])
async def test_swap_is_one_aliases_call_that_must_find_the_old_index(
    old_has_read_alias: bool,
) -> None:
    es, calls = admin({"exists_alias": old_has_read_alias})
    await es.swap_alias("kb_page", old="kb_page_v1", new="kb_page_v2")
    [(looked, where), (method, kwargs)] = calls.calls
    assert (looked, where) == ("exists_alias", {"name": "kb_page_live", "index": "kb_page_v1"})
    assert method == "update_aliases"
    remove_read = [{"remove": {"index": "kb_page_v1", "alias": "kb_page_live"}}]
    assert kwargs["actions"] == [
        {"remove": {"index": "kb_page_v1", "alias": "kb_page", "must_exist": True}},
        *(remove_read if old_has_read_alias else []),
        {"add": {"index": "kb_page_v2", "alias": "kb_page", "is_write_index": True}},
        {"add": {"index": "kb_page_v2", "alias": "kb_page_live", **_LIVE_ALIAS}},
    ]


async def test_put_alias_points_the_read_alias_in_the_same_call() -> None:
    es, calls = admin()
    await es.put_alias("kb_page", "kb_page_v1")
    [(method, kwargs)] = calls.calls
    assert method == "update_aliases"
    assert kwargs["actions"] == [
        {"add": {"index": "kb_page_v1", "alias": "kb_page", "is_write_index": True}},
        {"add": {"index": "kb_page_v1", "alias": "kb_page_live", **_LIVE_ALIAS}},
    ]


async def test_update_settings_sends_only_what_is_asked() -> None:
    es, calls = admin()
    await es.update_settings("kb_page_v1", replicas=1)
    await es.update_settings("kb_page_v1")
    assert calls.calls == [
        ("put_settings", {"index": "kb_page_v1", "settings": {"index": {"number_of_replicas": 1}}})
    ]


async def test_list_indices_reads_the_answer() -> None:
    created = datetime(2026, 7, 19, 8, 30, tzinfo=UTC)
    index = {
        "aliases": {"kb_page": {"is_write_index": True}, "kb_page_live": _LIVE_ALIAS},
        "mappings": {"_meta": {"projection_schema_version": 2}},
        "settings": {
            "index": {
                "creation_date": str(int(created.timestamp() * 1000)),
                "number_of_replicas": "1",
                "refresh_interval": "-1",
            }
        },
    }
    bodies = {
        "get": {"kb_page_v2": index, "kb_page": {"aliases": {}}, "kb_page_v2_x": {"aliases": {}}},
        "stats": {"indices": {"kb_page_v2": {"primaries": {"docs": {"count": 5}}}}},
    }
    es, calls = admin(bodies)
    assert await es.list_indices("kb_page") == [
        IndexInfo(
            "kb_page_v2",
            2,
            5,
            created,
            True,
            True,
            1,
            "-1",
            {"projection_schema_version": 2},
            read_aliased=True,
        )
    ]
    (_, get), (_, stats) = calls.calls
    assert get["index"] == "kb_page_v*,kb_page" and get["ignore_unavailable"] is True
    assert stats == {"index": "kb_page_v2", "metric": "docs"}


async def test_a_bad_name_is_refused_before_any_request() -> None:
    es, calls = admin()
    with pytest.raises(ValueError):
        await es.delete_index("kb_*")
    assert calls.calls == []


# -- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failure", "raised"),
    [
        (typed(400, "resource_already_exists_exception"), IndexExists),
        (typed(400, "invalid_index_name_exception", "already exists as alias"), IndexExists),
        (typed(400, "invalid_alias_name_exception"), IndexExists),
        (typed(404, "index_not_found_exception"), IndexMissing),
        (typed(404, "aliases_not_found_exception"), AliasConflict),
        (typed(500, "illegal_state_exception"), AliasConflict),
        (typed(400, "illegal_argument_exception"), IndexAdminError),
        (typed(429, "es_rejected_execution_exception"), TransientError),
        (typed(503, "unavailable_shards_exception"), TransientError),
        (ConnectionError("refused"), TransientError),
    ],
)
async def test_failures_become_the_ports_errors(failure: Exception, raised: type) -> None:
    es, _ = admin({"update_aliases": failure, "exists_alias": True})
    with pytest.raises(raised) as info:
        await es.swap_alias("kb_page", old="kb_page_v1", new="kb_page_v2")
    assert type(info.value) is raised


# -- the write-index rule -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "writer"),
    [
        ({}, None),
        ({"a": None}, "a"),
        ({"a": False}, None),
        ({"a": True}, "a"),
        ({"a": None, "b": None}, None),
        ({"a": False, "b": True}, "b"),
    ],
)
def test_effective_write_index(flags: Mapping[str, bool | None], writer: str | None) -> None:
    assert effective_write_index(flags) == writer


# -- init_index under a race ----------------------------------------------------------------------


class RivalCreates:
    """An `IndexAdmin` where another `init_index` creates the index just before we do."""

    def __init__(self, inner: IndexAdmin) -> None:
        self.inner = inner
        self.raced = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def create_index(self, name: str, body: Mapping[str, Any], **kwargs: Any) -> None:
        if not self.raced:
            self.raced = True
            await self.inner.create_index(name, body, **kwargs)
        await self.inner.create_index(name, body, **kwargs)


async def test_init_index_survives_a_concurrent_init() -> None:
    backend = FakeBackend()
    rival = RivalCreates(backend.admin)
    result = await init_index(cast(IndexAdmin, rival), "kb_page", MAPPING, schema_version=1)
    assert rival.raced
    assert (result.action, result.index) == (InitAction.EXISTS, "kb_page_v1")
    assert [i.name for i in await backend.admin.list_indices("kb_page")] == ["kb_page_v1"]


async def test_init_index_adds_the_read_alias_to_an_install_without_one() -> None:
    backend = FakeBackend()
    await init_index(backend.admin, "kb_page", MAPPING, schema_version=1)
    backend.fake.aliases.pop("kb_page_live")  # as an install from before the read alias
    dry = await init_index(backend.admin, "kb_page", MAPPING, dry_run=True)
    assert (dry.action, dry.index) == (InitAction.WOULD_ADD_READ_ALIAS, "kb_page_v1")
    assert not backend.fake.has("kb_page_live")
    result = await init_index(backend.admin, "kb_page", MAPPING)
    assert (result.action, result.index) == (InitAction.READ_ALIAS_ADDED, "kb_page_v1")
    assert backend.fake.aliases["kb_page_live"] == {"kb_page_v1": False}
    again = await init_index(backend.admin, "kb_page", MAPPING)
    assert again.action is InitAction.EXISTS
