"""The checks of a projector's `canonical_fields` promise (searchsync/projection/_registry.py),
shared by the property tests of each projector that makes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from searchsync.errors import PoisonMessage
from searchsync.projection import Projector, canonical_json
from searchsync.projection.canonical import normalize


def canonical_build(build: Callable[[Any], dict[str, Any]], row: dict[str, Any]) -> Any:
    """`build(row)`'s fields, asserted canonical already (None when `row` is poison)."""
    try:
        fields = build(row)
    except PoisonMessage:
        return None
    assert normalize(fields) == fields
    assert canonical_json(fields) == orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)
    return fields


def assert_walk_skippable(promised: Projector, walked: Projector, row: dict[str, Any]) -> None:
    """`promised` (canonical_fields) projects `row` exactly as `walked` (without) does: the same
    bytes, hash and body, or the same refusal."""
    try:
        expected = walked.project(row)
    except PoisonMessage as exc:
        with pytest.raises(PoisonMessage) as info:
            promised.project(row)
        assert info.value.message == exc.message
        return
    got = promised.project(row)
    assert got.encoded == expected.encoded
    assert got.projection_hash == expected.projection_hash
    assert got.body == expected.body == orjson.loads(got.encoded)
