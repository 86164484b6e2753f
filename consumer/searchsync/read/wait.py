"""Read-your-writes: wait, bounded by a timeout, until a committed revision (or a higher one) is
`Until.INDEXED` (a real-time GET through the write alias) or `Until.SEARCHABLE` (on the read
alias; for a delete, the tombstone on the write alias). Nothing here forces a refresh."""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from searchsync.config import Settings
from searchsync.naming import read_alias_name
from searchsync.search.client import make_es_client
from searchsync.search.reads import EsSearchReader, SearchReader, StoredDocument


class Until(enum.Enum):
    INDEXED = "indexed"
    SEARCHABLE = "searchable"


@dataclass(frozen=True, slots=True)
class Backoff:
    """The pause between two polls: `first_s`, times `factor` each poll, at most `max_s`."""

    first_s: float = 0.02
    factor: float = 2.0
    max_s: float = 0.5

    def __post_init__(self) -> None:
        if self.first_s <= 0 or self.factor < 1 or self.max_s < self.first_s:
            raise ValueError("want 0 < first_s <= max_s and factor >= 1")


DEFAULT_BACKOFF: Final = Backoff()


@dataclass(frozen=True, slots=True)
class WaitResult:
    """How a wait ended. `seen` is the last revision observed (None: no document), `deleted`
    whether that document is a tombstone."""

    reached: bool
    until: Until
    alias: str
    doc_id: str
    revision: int
    seen: int | None
    deleted: bool | None
    waited_s: float
    polls: int

    @property
    def message(self) -> str:
        what = f"{self.doc_id} revision {self.revision} {self.until.value} in {self.alias}"
        if self.seen is None:
            seen = "no document"
        else:
            seen = f"revision {self.seen}" + (" (a tombstone)" if self.deleted else "")
        if self.reached:
            return f"{what}: reached after {self.waited_s:.3f}s, saw {seen}"
        return f"{what}: timed out after {self.waited_s:.3f}s ({self.polls} polls), saw {seen}"

    def as_json(self) -> dict[str, Any]:
        return {
            "reached": self.reached,
            "until": self.until.value,
            "alias": self.alias,
            "id": self.doc_id,
            "revision": self.revision,
            "seen_revision": self.seen,
            "seen_deleted": self.deleted,
            "waited_s": round(self.waited_s, 6),
            "polls": self.polls,
            "message": self.message,
        }


Seen = tuple[bool, int | None, bool | None]  # reached, revision seen, is it a tombstone


async def wait_for_revision(
    reader: SearchReader,
    alias: str,
    doc_id: str,
    revision: int,
    *,
    until: Until = Until.INDEXED,
    timeout_s: float = 10.0,
    backoff: Backoff = DEFAULT_BACKOFF,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> WaitResult:
    """Poll until `doc_id` (through the write alias `alias`) reached `revision`, or `timeout_s`
    passed (then `WaitResult.reached` is False; nothing is raised for a timeout)."""
    if revision < 1 or timeout_s < 0:
        raise ValueError("want revision >= 1 and timeout_s >= 0")
    probe = _indexed if until is Until.INDEXED else _searchable
    start = clock()
    pause, polls = backoff.first_s, 0
    while True:
        reached, seen, deleted = await probe(reader, alias, doc_id, revision)
        polls += 1
        waited = clock() - start
        if reached or waited >= timeout_s:
            return WaitResult(reached, until, alias, doc_id, revision, seen, deleted, waited, polls)
        await sleep(min(pause, timeout_s - waited))
        pause = min(pause * backoff.factor, backoff.max_s)


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
    """`wait_for_revision` on the alias of `aggregate_type` with a client of its own, for an
    application without an event loop (not from a running one)."""

    async def go() -> WaitResult:
        client = make_es_client(settings)
        try:
            alias = settings.alias(aggregate_type)
            reader = EsSearchReader(client)
            return await wait_for_revision(
                reader, alias, doc_id, revision, until=until, timeout_s=timeout_s, backoff=backoff
            )
        finally:
            await client.close()

    return asyncio.run(go())


async def _indexed(reader: SearchReader, alias: str, doc_id: str, revision: int) -> Seen:
    version = (await reader.get_versions(alias, [doc_id])).get(doc_id)
    return version is not None and version >= revision, version, None


async def _searchable(reader: SearchReader, alias: str, doc_id: str, revision: int) -> Seen:
    only = {"ids": {"values": [doc_id]}}
    live = await _one(reader.search(read_alias_name(alias), only, size=1))
    if live is not None:  # what readers see; a live document below the revision is not it yet
        return live.version >= revision, live.version, False
    hit = await _one(reader.search(alias, only, size=1))
    if hit is None:
        return False, None, None
    deleted = hit.source.get("is_deleted") is True
    return deleted and hit.version >= revision, hit.version, deleted


async def _one(hits: Awaitable[list[StoredDocument]]) -> StoredDocument | None:
    found = await hits
    return found[0] if found else None
