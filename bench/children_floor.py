"""The floor of the article backfill with the fixed libraries (`bench.rebuild_floor` for the
article type): the same keyset scan of ``article`` (aiomysql, rows as tuples, 5 000 per chunk,
two chunks read ahead), per chunk one packed query for the tags (``JSON_ARRAYAGG``, decoded by
orjson) and one for the authors' names (tuples), the tags grouped by article and sorted by
(position, tag), the document's fields in canonical JSON twice, SHA-256 and CRC32 (no validation,
no NFC), 500 index actions per ``bulk`` with external versions, one in flight. None of
searchsync's own code: its docs/s against the raw bulk's is the best ratio any backfill of these
documents on these libraries could show in that run."""

from __future__ import annotations

import asyncio
import hashlib
import zlib
from collections.abc import Sequence
from typing import Any, Final

import aiomysql
import orjson
from elasticsearch import AsyncElasticsearch

from bench.rebuild_floor import Chunk, floor_backfill

_CHUNK: Final = 5_000
_TAGS: Final = (
    "SET STATEMENT group_concat_max_len = 67108864 FOR SELECT JSON_ARRAYAGG(JSON_ARRAY("
    "article_id, position, tag)) FROM article_tag WHERE article_id IN %s"
)


def _in(sql: str, n: int) -> str:
    return sql.replace("IN %s", "IN (" + ", ".join(["%s"] * n) + ")")


async def _relations(
    cur: Any, rows: Sequence[tuple[Any, ...]]
) -> tuple[dict[str, list[str]], dict[str, str]]:
    ids = tuple(r[0] for r in rows)
    await cur.execute(_in(_TAGS, len(ids)), ids)
    (text,) = await cur.fetchone()
    by_article: dict[str, list[tuple[int, str]]] = {}
    for article_id, position, tag in orjson.loads(text) if text else ():
        by_article.setdefault(article_id, []).append((position, tag))
    tags = {k: [t for _, t in sorted(v)] for k, v in by_article.items()}
    authors = tuple({r[3] for r in rows if r[3] is not None})
    names: dict[str, str] = {}
    if authors:
        await cur.execute(_in("SELECT id, name FROM author WHERE id IN %s", len(authors)), authors)
        names = {str(i): str(n) for i, n in await cur.fetchall()}
    return tags, names


def encode_articles(
    rows: Sequence[tuple[Any, ...]], tags: dict[str, list[str]], names: dict[str, str], v: int
) -> Chunk:
    """(id, revision, body) of each article row (id, title, body, author_id, revision,
    deleted_at): its document's fields, canonical JSON for the hash and for the body, SHA-256,
    CRC32."""
    out: Chunk = []
    for doc_id, title, body, author_id, revision, deleted_at in rows:
        doc = {
            "id": doc_id,
            "title": title,
            "body": body,
            "tags": tags.get(doc_id, []),
            "author_name": None if author_id is None else names.get(author_id),
            "is_deleted": deleted_at is not None,
            "source_revision": revision,
            "projection_schema_version": v,
        }
        canonical = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
        doc["projection_hash"] = hashlib.sha256(canonical).hexdigest()
        doc["sync_hash"] = zlib.crc32(f"article:{doc_id}".encode())
        out.append((doc_id, revision, orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)))
    return out


async def _scan(pool: aiomysql.Pool, ready: asyncio.Queue[Chunk | None], v: int) -> None:
    after = ""
    async with pool.acquire() as conn:
        while True:
            async with conn.cursor() as cur:  # tuples
                await cur.execute(
                    "SELECT id, title, body, author_id, revision, deleted_at FROM article"
                    " WHERE id > %s ORDER BY id LIMIT %s",
                    (after, _CHUNK),
                )
                rows = list(await cur.fetchall())
                if not rows:
                    return
                tags, names = await _relations(cur, rows)
            after = str(rows[-1][0])
            docs: Chunk = []
            for s in range(0, len(rows), 500):  # a turn of the loop per bulk's worth
                docs.extend(encode_articles(rows[s : s + 500], tags, names, v))
                await asyncio.sleep(0)
            await ready.put(docs)


async def article_floor_backfill(
    pool: aiomysql.Pool, es: AsyncElasticsearch, index: str, schema_version: int
) -> tuple[int, float, int]:
    """Fill the existing `index` with the whole article table: (documents, seconds, errors)."""
    return await floor_backfill(pool, es, index, schema_version, _scan)
