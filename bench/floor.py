"""The floor of the fixed libraries: the CPU that confluent-kafka, orjson, aiomysql and the async
Elasticsearch client alone cost per event, doing only what any consumer of a thin event must do,
without any of searchsync's own code.

For the bench's own events, in the bench process, each step timed with ``time.process_time()``
(every thread of the process, as /proc/PID/stat counts the consumer's), best of `repeats`:

- ``kafka consume``: ``Consumer.consume(500)`` of the events from the shared topic, reading each
  message's value, key, partition and offset;
- ``json decode``: ``orjson.loads`` of each value (Debezium's outbox router emits JSON);
- ``mysql re-read``: the wiki_page rows by id, 500 per ``SELECT ... WHERE id IN``, as tuples
  (aiomysql parses MySQL's protocol in Python);
- ``hash and encode``: the least a projection does (`encode_rows`): ``orjson.loads`` of the
  relations, flattened to their targets, canonical JSON (sorted keys) once for the hash and once
  for the body, SHA-256;
- ``es bulk client``: 500 index actions per ``bulk`` with external versions into a scratch
  index, the response parsed (the client's side only: Elasticsearch's CPU is not this process);
- ``state upsert``: one multi-row ``INSERT ... ON DUPLICATE KEY UPDATE`` of
  ``search_projection_state`` per 500 rows (a scratch aggregate type, deleted afterwards), its
  values escaped by the connection and formatted into the statement (since 2026-12-02; before,
  aiomysql escaped them as parameters, about twice the CPU).

No validation, no ordering, no retries, no metrics, no logs: a consumer costs at least this.
"""

from __future__ import annotations

import hashlib
import time
import uuid
import zlib
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

import aiomysql
import orjson
from confluent_kafka import Consumer, TopicPartition
from elasticsearch import AsyncElasticsearch

from bench.common import item_errors

BATCH: Final = 500
STEPS: Final = (
    "kafka consume",
    "json decode",
    "mysql re-read",
    "hash and encode",
    "es bulk client",
    "state upsert",
)
COLUMNS: Final = "id, title, content, relations_json, revision, deleted_at"
_SCRATCH_TYPE: Final = "bench-floor"

RowTuple = tuple[Any, ...]  # the `COLUMNS` of one wiki_page row, in order


def _consume(bootstrap: str, topic: str, start: Mapping[int, int], n: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-floor-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    values: list[bytes] = []
    deadline = time.monotonic() + 120
    try:
        consumer.assign([TopicPartition(topic, p, o) for p, o in start.items()])
        while len(values) < n and time.monotonic() < deadline:
            for msg in consumer.consume(BATCH, 0.5):
                if msg.error() is None:
                    msg.key(), msg.partition(), msg.offset()
                    values.append(cast(bytes, msg.value()))
    finally:
        consumer.close()
    return values


def _decode(values: Sequence[bytes]) -> int:
    bad = 0
    for value in values:
        try:
            orjson.loads(value)
        except orjson.JSONDecodeError:
            bad += 1
    return bad


async def _reread(pool: aiomysql.Pool, ids: Sequence[str]) -> list[RowTuple]:
    rows: list[RowTuple] = []
    async with pool.acquire() as conn:
        for s in range(0, len(ids), BATCH):
            part = list(ids[s : s + BATCH])
            marks = ", ".join(["%s"] * len(part))
            async with conn.cursor() as cur:  # tuples: cheaper than a DictCursor's dicts
                await cur.execute(f"SELECT {COLUMNS} FROM wiki_page WHERE id IN ({marks})", part)
                rows.extend(await cur.fetchall())
    return rows


def encode_rows(rows: Sequence[RowTuple], schema_version: int) -> list[tuple[str, int, bytes]]:
    """(id, revision, body) of each row (the `COLUMNS`, in order): the wiki_page document's
    fields (the relations flattened to sorted ``type:id`` targets, so that the strict mapping
    takes it), canonical JSON for the hash and again for the body, SHA-256, the repair bucket's
    CRC32; no validation, no NFC. A row whose relations are not in the layout is left out."""
    out: list[tuple[str, int, bytes]] = []
    for doc_id, title, content, relations_json, revision, deleted_at in rows:
        try:
            relations = {
                kind: sorted({f"{e['entity_type']}:{e['entity_id']}" for e in entities})
                for kind, entities in orjson.loads(relations_json).items()
            }
        except (TypeError, KeyError, AttributeError):  # not the relations layout: refused
            continue
        doc = {
            "id": doc_id,
            "title": title,
            "content": content,
            "relations": relations,
            "relation_target_ids": sorted({t for ts in relations.values() for t in ts}),
            "source_revision": revision,
            "projection_schema_version": schema_version,
            "is_deleted": deleted_at is not None,
        }
        canonical = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
        doc["projection_hash"] = hashlib.sha256(canonical).hexdigest()
        doc["sync_hash"] = zlib.crc32(f"wiki_page:{doc_id}".encode())
        out.append((doc_id, revision, orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)))
    return out


async def bulk_docs(
    es: AsyncElasticsearch, index: str, docs: Sequence[tuple[str, int, bytes]]
) -> int:
    """Index `docs` (`encode_rows`'s) into `index`, `BATCH` per bulk with external versions, one
    bulk at a time; the item errors."""
    errors = 0
    for s in range(0, len(docs), BATCH):
        lines: list[bytes] = []
        for doc_id, revision, body in docs[s : s + BATCH]:
            action = {"_index": index, "_id": doc_id, "version": revision}
            lines.append(orjson.dumps({"index": {**action, "version_type": "external"}}))
            lines.append(body)
        resp: Any = await es.bulk(operations=cast(Any, lines), filter_path="items.*.status")
        errors += item_errors(resp)
    return errors


async def _upsert(pool: aiomysql.Pool, docs: Sequence[tuple[str, int, bytes]]) -> None:
    """The statement's values escaped by the connection and formatted in (ints as they are, a
    value every row repeats escaped once): cheaper than aiomysql's escaping of parameters, and
    what the consumer's state writer does."""
    async with pool.acquire() as conn, conn.cursor() as cur:
        kind, digest = conn.escape(_SCRATCH_TYPE), conn.escape("0" * 64)
        for s in range(0, len(docs), BATCH):
            values = ", ".join(
                f"({kind}, {conn.escape(i)}, {r:d}, {r:d}, 1, {digest})"
                for i, r, _ in docs[s : s + BATCH]
            )
            await cur.execute(
                "INSERT INTO search_projection_state (aggregate_type, aggregate_id,"
                " source_revision, indexed_revision, projection_schema_version,"
                f" projection_hash) VALUES {values} ON DUPLICATE KEY UPDATE"
                " indexed_revision = VALUES(indexed_revision),"
                " projection_hash = VALUES(projection_hash)"
            )
        await conn.commit()


async def _cleanup(pool: aiomysql.Pool) -> None:
    async with pool.acquire() as conn, conn.cursor() as cur:
        await cur.execute(
            "DELETE FROM search_projection_state WHERE aggregate_type = %s", (_SCRATCH_TYPE,)
        )
        await conn.commit()


async def library_floor(
    *,
    bootstrap: str,
    topic: str,
    start: Mapping[int, int],
    n: int,
    pool: aiomysql.Pool,
    es: AsyncElasticsearch,
    ids: Sequence[str],
    index_prefix: str,
    schema_version: int,
    repeats: int = 3,
) -> dict[str, float]:
    """CPU ms per event of each step (`STEPS`), the best of `repeats`: `n` messages from `topic`
    at `start`, the wiki_page rows of `ids`."""
    best = dict.fromkeys(STEPS, float("inf"))

    def note(step: str, since: float, count: int) -> float:
        """Record `step`'s CPU per item since `since`; the CPU clock now, for the next step."""
        now = time.process_time()
        best[step] = min(best[step], 1000 * (now - since) / max(1, count))
        return now

    try:
        for round_no in range(repeats):
            t = time.process_time()
            values = _consume(bootstrap, topic, start, n)  # blocking, on this thread
            t = note("kafka consume", t, len(values))
            _decode(values)
            t = note("json decode", t, len(values))
            rows = await _reread(pool, ids)
            t = note("mysql re-read", t, len(rows))
            docs = encode_rows(rows, schema_version)
            note("hash and encode", t, len(rows))
            index = f"{index_prefix}floor{round_no}"
            await es.indices.create(index=index, settings={"number_of_replicas": 0})
            try:
                t = time.process_time()
                await bulk_docs(es, index, docs)
                note("es bulk client", t, len(docs))
            finally:
                await es.indices.delete(index=index)
            t = time.process_time()
            await _upsert(pool, docs)
            note("state upsert", t, len(docs))
    finally:
        await _cleanup(pool)
    return best
