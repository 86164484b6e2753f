"""The blocking form of `wait_for_revision`, for an application without an event loop: one
client per call, opened and closed inside it."""

from __future__ import annotations

import asyncio

from searchsync.config import Settings
from searchsync.read.wait import DEFAULT_BACKOFF, Backoff, Until, WaitResult, wait_for_revision
from searchsync.search.client import make_es_client
from searchsync.search.reads import EsSearchReader

__all__ = ["wait_for_revision_sync"]


def wait_for_revision_sync(
    settings: Settings,
    aggregate_type: str,
    doc_id: str,
    revision: int,
    *,
    until: Until = Until.INDEXED,
    timeout_s: float = 10.0,
    backoff: Backoff = DEFAULT_BACKOFF,
) -> WaitResult:
    """`wait_for_revision` on the alias of `aggregate_type`, with a client of `settings`. Must
    not be called from a running event loop (await the async form)."""

    async def go() -> WaitResult:
        client = make_es_client(settings)
        try:
            return await wait_for_revision(
                EsSearchReader(client),
                settings.alias(aggregate_type),
                doc_id,
                revision,
                until=until,
                timeout_s=timeout_s,
                backoff=backoff,
            )
        finally:
            await client.close()

    return asyncio.run(go())
