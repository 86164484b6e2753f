"""The independent checker: MySQL rows against Elasticsearch documents, both ways.

Written from the contract in docs/design.md ("The wiki_page document", "Tombstones and their
purge", invariants 2-4 and 6), NOT from the projector: nothing here imports `searchsync.projection`.
For every row of the run's id prefix the document must exist with

- ``_version`` = ``source_revision`` = the row's ``revision`` (invariant 3);
- the projected fields the contract gives: ``id``, ``title`` and ``content`` (NFC),
  ``relations`` (per relation type the sorted, distinct ``"<entity_type>:<entity_id>"``),
  ``relation_target_ids`` (their sorted union), ``projection_schema_version`` 2, ``is_deleted``
  (``deleted_at`` set), and ``projection_hash`` = sha256 of the canonical JSON of those fields;
- ``tombstoned_at`` = ``deleted_at`` (ISO-8601 UTC, milliseconds, ``Z``) on a soft-deleted row,
  absent on a live one.

For every hard-deleted id (a revision floor, no row): a tombstone at the floor's revision
(``is_deleted: true``, only the id/revision/schema fields, with its hash, and a
``tombstoned_at``). The other way: every document of the prefix must be one of the above (no
orphans). `resurrected` counts documents that are live while the truth says deleted.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiomysql
from elasticsearch import AsyncElasticsearch

SCHEMA_VERSION = 2  # docs/design.md: "projection_schema_version 2"
_OPERATIONAL = ("tombstoned_at", "sync_hash")


@dataclass(slots=True)
class CheckReport:
    rows: int = 0
    hard_deleted: int = 0
    documents: int = 0
    divergent: int = 0
    resurrected: int = 0
    examples: list[str] = field(default_factory=list)

    def fail(self, doc_id: str, why: str, *, resurrected: bool = False) -> None:
        self.divergent += 1
        self.resurrected += int(resurrected)
        if len(self.examples) < 10:
            self.examples.append(f"{doc_id}: {why}")


def canonical(value: Any) -> bytes:
    """Canonical JSON as docs/design.md defines it: keys sorted by code point, no whitespace,
    strings NFC (the values here are NFC already), UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def expected_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    raw = row["relations_json"]
    relations_in = json.loads(raw) if isinstance(raw, str | bytes) else raw
    relations = {
        kind: sorted(
            {unicodedata.normalize("NFC", f"{e['entity_type']}:{e['entity_id']}") for e in items}
        )
        for kind, items in relations_in.items()
    }
    return {
        "id": row["id"],
        "title": unicodedata.normalize("NFC", _text(row["title"])),
        "content": unicodedata.normalize("NFC", _text(row["content"])),
        "relations": relations,
        "relation_target_ids": sorted({t for ts in relations.values() for t in ts}),
        "source_revision": int(row["revision"]),
        "projection_schema_version": SCHEMA_VERSION,
        "is_deleted": row["deleted_at"] is not None,
    }


def tombstone_fields(doc_id: str, revision: int) -> dict[str, Any]:
    return {
        "id": doc_id,
        "source_revision": revision,
        "projection_schema_version": SCHEMA_VERSION,
        "is_deleted": True,
    }


def iso_ms(at: datetime) -> str:
    utc = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


async def check(
    pool: aiomysql.Pool, es: AsyncElasticsearch, alias: str, id_prefix: str
) -> CheckReport:
    rows = await _rows(pool, id_prefix)
    floors = await _floors(pool, id_prefix)
    docs = await documents(es, alias, id_prefix)
    report = CheckReport(rows=len(rows), documents=len(docs))
    for doc_id, row in rows.items():
        _compare(report, doc_id, docs.get(doc_id), expected_fields(row), row["deleted_at"])
    for doc_id, revision in floors.items():
        if doc_id in rows:
            continue  # re-created since its hard delete: the row decides
        report.hard_deleted += 1
        _compare(report, doc_id, docs.get(doc_id), tombstone_fields(doc_id, revision), None)
    for doc_id in docs.keys() - rows.keys() - floors.keys():  # an orphan: divergent
        report.fail(doc_id, "a document without a row or a delete")
    return report


def _compare(
    report: CheckReport,
    doc_id: str,
    hit: Mapping[str, Any] | None,
    want: dict[str, Any],
    deleted_at: datetime | None,
) -> None:
    if hit is None:
        report.fail(doc_id, f"missing (want revision {want['source_revision']})")
        return
    source = hit["_source"]
    resurrected = want["is_deleted"] and not source.get("is_deleted")
    if hit["_version"] != want["source_revision"]:
        why = f"_version {hit['_version']} != revision {want['source_revision']}"
        report.fail(doc_id, why, resurrected=resurrected)
        return
    got = {k: v for k, v in source.items() if k not in _OPERATIONAL and k != "projection_hash"}
    if got != want:
        report.fail(doc_id, f"fields differ: {got} != {want}", resurrected=resurrected)
        return
    if source.get("projection_hash") != hashlib.sha256(canonical(want)).hexdigest():
        report.fail(doc_id, "projection_hash is not the hash of its fields")
        return
    stamp = source.get("tombstoned_at")
    if want["is_deleted"] and (stamp is None or (deleted_at and stamp != iso_ms(deleted_at))):
        report.fail(doc_id, f"tombstoned_at {stamp!r} (deleted_at {deleted_at})")
    elif not want["is_deleted"] and stamp is not None:
        report.fail(doc_id, f"a live document with tombstoned_at {stamp!r}")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)


async def _select(pool: aiomysql.Pool, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        await conn.begin()
        async with conn.cursor(aiomysql.DictCursor) as cur:
            await cur.execute(sql, args)
            out = list(await cur.fetchall())
        await conn.commit()
        return out


async def _rows(pool: aiomysql.Pool, prefix: str) -> dict[str, dict[str, Any]]:
    rows = await _select(
        pool,
        "SELECT id, title, content, relations_json, revision, deleted_at FROM wiki_page"
        " WHERE id LIKE %s",
        (prefix + "%",),
    )
    return {r["id"]: r for r in rows}


async def _floors(pool: aiomysql.Pool, prefix: str) -> dict[str, int]:
    rows = await _select(
        pool,
        "SELECT aggregate_id, revision FROM search_revision_floor"
        " WHERE aggregate_type = 'wiki_page' AND aggregate_id LIKE %s",
        (prefix + "%",),
    )
    return {r["aggregate_id"]: int(r["revision"]) for r in rows}


async def documents(es: AsyncElasticsearch, alias: str, prefix: str) -> dict[str, Any]:
    """The documents whose ``id`` field (a keyword, = ``_id`` by the contract) has the prefix.
    On a shared topic the index also holds other writers' pages: they are not this run's."""
    await es.indices.refresh(index=alias)
    resp: Any = await es.search(
        index=alias,
        query={"prefix": {"id": prefix}},
        size=10_000,
        version=True,
        track_total_hits=True,
    )
    total = resp["hits"]["total"]["value"]
    if total > 10_000:
        raise AssertionError(f"{total} documents: more than one page, keep the workload smaller")
    return {h["_id"]: h for h in resp["hits"]["hits"]}
