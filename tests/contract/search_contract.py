"""The `SearchEngine` contract (through `Sink`).

Each case takes a `Backend` and runs unchanged against the in-memory fake (tests/unit) and a real
node (tests/integration).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import orjson
import pytest
from searchsync.errors import Disposition, TransientError
from searchsync.search.sink import IndexOp, OutcomeKind

from tests.contract.search_backend import Backend, body, new_alias, op, physical, write


async def contract_new_document_is_applied(h: Backend) -> None:
    alias = await new_alias(h)
    new = op(alias, "p1", 3)
    [outcome] = await write(h, new)
    assert outcome.kind is OutcomeKind.APPLIED and outcome.stored_version == 3
    assert await h.stored(alias, "p1") == (3, orjson.loads(new.body_json))


async def contract_newer_revision_replaces(h: Backend) -> None:
    alias = await new_alias(h)
    await write(h, op(alias, "p1", 3))
    [outcome] = await write(h, op(alias, "p1", 4, title="新标题"))
    assert outcome.kind is OutcomeKind.APPLIED
    stored = await h.stored(alias, "p1")
    assert stored is not None and stored[0] == 4 and stored[1]["title"] == "新标题"


async def contract_same_revision_is_already_applied(h: Backend) -> None:
    alias = await new_alias(h)
    await write(h, op(alias, "p1", 3))
    [outcome] = await write(h, op(alias, "p1", 3))
    assert outcome.kind is OutcomeKind.ALREADY_APPLIED
    assert outcome.stored_version == 3


async def contract_older_revision_is_ahead_and_not_written(h: Backend) -> None:
    alias = await new_alias(h)
    await write(h, op(alias, "p1", 5, title="五"))
    [outcome] = await write(h, op(alias, "p1", 4, title="四"))
    assert outcome.kind is OutcomeKind.AHEAD and outcome.stored_version == 5
    stored = await h.stored(alias, "p1")
    assert stored is not None and stored[0] == 5 and stored[1]["title"] == "五"


async def contract_tombstone_blocks_a_late_upsert(h: Backend) -> None:
    alias = await new_alias(h)
    await write(h, op(alias, "p1", 1))
    [deleted] = await write(h, op(alias, "p1", 2, deleted=True))
    [late] = await write(h, op(alias, "p1", 1))
    assert deleted.kind is OutcomeKind.APPLIED
    assert late.kind is OutcomeKind.AHEAD and late.stored_version == 2
    stored = await h.stored(alias, "p1")
    assert stored is not None and stored[1]["is_deleted"] is True


async def contract_missing_alias_is_retry_and_creates_nothing(h: Backend) -> None:
    alias = await new_alias(h)
    missing = alias + "_missing"
    [outcome] = await write(h, op(missing, "p1", 1))
    assert outcome.kind is OutcomeKind.FAILED and outcome.code == "ALIAS_MISSING"
    assert outcome.code is not None and outcome.code.disposition is Disposition.SYSTEMIC
    assert not await h.admin.exists(missing)


async def contract_physical_index_name_is_refused(h: Backend) -> None:
    alias = await new_alias(h)
    [outcome] = await write(h, op(physical(alias), "p1", 1))
    assert outcome.kind is OutcomeKind.FAILED and outcome.code == "ALIAS_MISSING"
    assert await h.stored(alias, "p1") is None


async def contract_unknown_field_is_mapping_poison(h: Backend) -> None:
    alias = await new_alias(h)
    raw = orjson.dumps({**body("p1", 1), "surprise": "x"})
    [outcome] = await write(h, IndexOp(alias, "p1", 1, raw))
    assert outcome.kind is OutcomeKind.FAILED and outcome.code == "MAPPING_ERROR"
    assert await h.stored(alias, "p1") is None


async def contract_mixed_batch_keeps_order(h: Backend) -> None:
    alias = await new_alias(h)
    await write(h, op(alias, "b", 2), op(alias, "c", 3))
    bad = IndexOp(alias, "d", 1, orjson.dumps({"id": "d", "surprise": 1}))
    outcomes = await write(h, op(alias, "a", 1), op(alias, "b", 2), op(alias, "c", 1), bad)
    assert [o.op.doc_id for o in outcomes] == ["a", "b", "c", "d"]
    assert [o.kind for o in outcomes] == [
        OutcomeKind.APPLIED,
        OutcomeKind.ALREADY_APPLIED,
        OutcomeKind.AHEAD,
        OutcomeKind.FAILED,
    ]
    assert [o.stored_version for o in outcomes[:3]] == [1, 2, 3]


async def contract_same_document_twice_in_one_batch(h: Backend) -> None:
    alias = await new_alias(h)
    outcomes = await write(h, op(alias, "p1", 2), op(alias, "p1", 1), op(alias, "p1", 3))
    assert [o.kind for o in outcomes] == [
        OutcomeKind.APPLIED,
        OutcomeKind.AHEAD,
        OutcomeKind.APPLIED,
    ]
    stored = await h.stored(alias, "p1")
    assert stored is not None and stored[0] == 3


async def contract_get_versions(h: Backend) -> None:
    alias = await new_alias(h)
    await write(h, op(alias, "p1", 7))
    assert await h.index.get_versions(alias, ["p1", "nope"]) == {"p1": 7, "nope": None}
    with pytest.raises(TransientError) as info:
        await h.index.get_versions(alias + "_missing", ["p1"])
    assert info.value.code == "ALIAS_MISSING"


SEARCH_INDEX_CASES: list[Callable[[Backend], Awaitable[None]]] = [
    contract_new_document_is_applied,
    contract_newer_revision_replaces,
    contract_same_revision_is_already_applied,
    contract_older_revision_is_ahead_and_not_written,
    contract_tombstone_blocks_a_late_upsert,
    contract_missing_alias_is_retry_and_creates_nothing,
    contract_physical_index_name_is_refused,
    contract_unknown_field_is_mapping_poison,
    contract_mixed_batch_keeps_order,
    contract_same_document_twice_in_one_batch,
    contract_get_versions,
]
