"""The documents of the `SearchEngine` read contracts (the repair wheel's and the rebuild's): the
search contract's, plus ``sync_hash``."""

from __future__ import annotations

from typing import Any

import orjson
from searchsync.search.sink import IndexOp

from tests.contract.search_backend import MAPPING, SCHEMA_VERSION, Backend, body, physical, write

READ_MAPPING: dict[str, Any] = {
    **MAPPING,
    "mappings": {
        **MAPPING["mappings"],
        "properties": {**MAPPING["mappings"]["properties"], "sync_hash": {"type": "long"}},
    },
}


def doc(
    doc_id: str,
    version: int,
    sync_hash: int,
    *,
    title: str = "t",
    deleted: bool = False,
    schema: int = SCHEMA_VERSION,
) -> tuple[int, dict[str, Any]]:
    """(version, body): a document of the contract mapping in bucket key `sync_hash`."""
    fields = {"sync_hash": sync_hash, "projection_schema_version": schema}
    return version, body(doc_id, version, title=title, deleted=deleted) | fields


async def filled(h: Backend, docs: dict[str, tuple[int, dict[str, Any]]]) -> tuple[str, str]:
    """A fresh alias over a fresh ``<alias>_v1`` holding `docs` ({id: (version, body)}),
    refreshed; returns the alias and the index."""
    alias = h.fresh_alias()
    index = physical(alias)
    await h.admin.create_index(index, READ_MAPPING, alias=alias)
    ops = [IndexOp(alias, i, v, orjson.dumps(source)) for i, (v, source) in docs.items()]
    await write(h, *ops)
    await h.index.refresh(index)
    return alias, index
