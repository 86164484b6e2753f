"""The rebuild's backfill of a type with children and a lookup (the example `article`: tags in
``article_tag``, the author through ``author_id``) against a raw bulk of the same documents.

    python -m bench.children_bench [--rows N] [--tags T] [--authors A] [--rounds R]
        [--reference] [--json]

Against the real local stack, with its own index prefix and id prefix. Seeds N articles of
~1 KiB with T tags each and one of A authors (plain rows, no outbox events: nothing else indexes
them), then runs `bench.rebuild_child.compare` on the article projector in a child process (as
``searchsync rebuild`` runs, and as `bench.rebuild_bench` measures it; the bench process, which
seeded the rows, stays idle meanwhile): the rebuild's `Backfill` over the whole ``article`` table
(one ``IN`` query per child and lookup table per chunk, through the truth port's `scan`) against
the raw bulk of exactly the documents it wrote, in R rounds in turn. Reports the median ratio
(target >= 0.9) and deletes its indices and rows. With ``--reference``, the same comparison
follows, in another child, for the same articles read without their children and lookup
(``build`` given no tags and no author): on a shared box, the difference of the two ratios is the
cost of the children, whatever the box's load does to both. Progress goes to stderr, the report
to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
import time
import uuid
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Final

import aiomysql
from searchsync.config import Settings, load_settings
from searchsync.examples import article
from searchsync.mysql.pool import close_pool, open_pool, transaction
from searchsync.projection import Projector, Row, registry_from_settings
from searchsync.search.client import make_es_client

from bench.children_floor import article_floor_backfill
from bench.common import bench_env, bench_main, host_line, open_app_pool, page_body, progress
from bench.rebuild_child import compare
from bench.rebuild_report import RATIO_TARGET

MODULES: Final = "searchsync.projection.wiki_page,searchsync.examples.article"
_BATCH: Final = 1_000
_AUTHOR_SQL: Final = (
    "INSERT INTO author (id, name, revision, updated_at) VALUES (%s, %s, 1, UTC_TIMESTAMP(6))"
)
_ARTICLE_SQL: Final = (
    "INSERT INTO article (id, title, body, author_id, revision, updated_at)"
    " VALUES (%s, %s, %s, %s, 1, UTC_TIMESTAMP(6))"
)
_TAG_SQL: Final = "INSERT INTO article_tag (article_id, position, tag) VALUES (%s, %s, %s)"


@dataclass(frozen=True, slots=True)
class Options:
    rows: int = 10_000
    tags: int = 5
    authors: int = 100
    rounds: int = 3
    reference: bool = False
    as_json: bool = False
    compare_child: str | None = None  # the child's job: {"rounds": R, "bare": bool}


async def seed(pool: aiomysql.Pool, prefix: str, o: Options) -> float:
    """N articles, T tags each, A authors, under `prefix`; the seconds it took."""
    t0 = time.monotonic()
    authors = [(f"{prefix}u{n}", f"作者 {n}") for n in range(o.authors)]
    await _insert(pool, _AUTHOR_SQL, authors)
    for start in range(0, o.rows, _BATCH):
        articles, tags = [], []
        for n in range(start, min(o.rows, start + _BATCH)):
            article_id = f"{prefix}{n}"
            title, content, _ = page_body(article_id)
            articles.append((article_id, title, content, authors[n % o.authors][0]))
            tags += [(article_id, p, f"标签{(n + p) % 50}") for p in range(o.tags)]
        await _insert(pool, _ARTICLE_SQL, articles)
        await _insert(pool, _TAG_SQL, tags)
    return time.monotonic() - t0


async def clean(pool: aiomysql.Pool, prefix: str) -> None:
    like = prefix + "%"
    for sql in (
        "DELETE FROM article_tag WHERE article_id LIKE %s",
        "DELETE FROM article WHERE id LIKE %s",
        "DELETE FROM author WHERE id LIKE %s",
    ):
        async with transaction(pool) as conn, conn.cursor() as cur:
            await cur.execute(sql, (like,))


async def _insert(pool: aiomysql.Pool, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
    if rows:
        async with transaction(pool) as conn, conn.cursor() as cur:
            await cur.executemany(sql, rows)


async def run(o: Options, command: str) -> dict[str, Any]:
    env = bench_env({"SEARCHSYNC_PROJECTION_MODULES": MODULES})
    settings = load_settings(env)
    prefix = f"cbench-{uuid.uuid4().hex[:8]}-"
    app = await open_app_pool(settings.mysql, minsize=1, maxsize=2)
    es = make_es_client(settings)
    report: dict[str, Any] = {"command": command, "host": host_line(), "rows_seeded": o.rows}
    try:
        report["seed_seconds"] = await seed(app, prefix, o)
        progress(f"seeded {o.rows} articles, {o.rows * o.tags} tags, {o.authors} authors")
        report.update(await _in_child(env, o.rounds, bare=False))
        progress(f"with children: ratio {report['ratio']:.2f}")
        if o.reference:
            bare = await _in_child(env, o.rounds, bare=True)
            report["reference"] = {k: bare[k] for k in ("ratio", "round_ratios")}
            report["reference"].update(backfill_docs_per_s=bare["backfill_docs_per_s"])
            report["reference"].update(raw_docs_per_s=bare["raw_docs_per_s"])
    finally:
        got: Any = await es.indices.get(index=f"{settings.elasticsearch.index_prefix}*")
        for name in got.body:
            await es.indices.delete(index=name)
        await es.close()
        await clean(app, prefix)
        await close_pool(app)
    return report


async def _in_child(env: dict[str, str], rounds: int, *, bare: bool) -> dict[str, Any]:
    """`compare` in a child process (`compare_child`): its report."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.children_bench",
        "--compare-child",
        json.dumps({"rounds": rounds, "bare": bare}),
        stdout=asyncio.subprocess.PIPE,
        env=env,
    )
    out, _ = await asyncio.wait_for(child.communicate(), 600 * (1 + rounds))
    if child.returncode != 0:
        raise RuntimeError(f"the backfill/raw child exited with {child.returncode}")
    [line] = [x for x in out.decode().splitlines() if x.startswith("{")]
    report: dict[str, Any] = json.loads(line)
    return report


async def compare_child(spec_json: str) -> None:
    """The child's job: `compare` on the article projector (with ``bare``, without its
    children and lookup), one JSON line on stdout."""
    spec = json.loads(spec_json)
    settings: Settings = load_settings(dict(os.environ))
    projector = registry_from_settings(settings.projection).get("article")
    if spec["bare"]:
        projector = _without_relations(projector)
    pool = await open_pool(settings.mysql, maxsize=2)
    es = make_es_client(settings)
    try:
        floor = None if spec["bare"] else article_floor_backfill
        report = await compare(settings, es, pool, projector, int(spec["rounds"]), floor)
        print(json.dumps(report), flush=True)
    finally:
        await es.close()
        await close_pool(pool)


def _without_relations(projector: Projector) -> Projector:
    def build(row: Row) -> dict[str, Any]:
        return article.build({**row, "tags": [], "author": None})

    return dataclasses.replace(projector, build=build, children=(), lookups=())


def parse_args(argv: Sequence[str]) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench.children_bench", description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000, help="articles to seed")
    parser.add_argument("--tags", type=int, default=5, help="tags per article")
    parser.add_argument("--authors", type=int, default=100, help="authors to seed")
    parser.add_argument("--rounds", type=int, default=3, help="backfill and raw bulk in turn")
    parser.add_argument("--reference", action="store_true", help="also without children and lookup")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--compare-child", help=argparse.SUPPRESS)
    a = parser.parse_args(argv)
    if min(a.rows, a.authors, a.rounds) < 1 or a.tags < 0:
        parser.error("--rows, --authors and --rounds must be positive, --tags not negative")
    return Options(a.rows, a.tags, a.authors, a.rounds, a.reference, a.json, a.compare_child)


def render(o: Options, r: dict[str, Any]) -> str:
    if o.as_json:
        return json.dumps(r, ensure_ascii=False)
    met = "MET" if r["ratio"] >= RATIO_TARGET else "MISSED"
    rounds = ", ".join(f"{x:.2f}" for x in r["round_ratios"])
    return "\n".join([
        f"searchsync rebuild benchmark, article with children  {r['host']}",
        f"command: {r['command']}",
        f"seed: {o.rows} articles x {o.tags} tags, {o.authors} authors in"
        f" {r['seed_seconds']:.1f}s; the table holds {r['table_rows']} rows",
        f"backfill   {r['backfill_docs_per_s']:8.0f} docs/s  ({r['backfill_indexed']} docs,"
        f" {r['backfill_chunks']} chunks, MySQL scans {r['backfill_scan_seconds']:.2f}s of"
        f" {r['backfill_seconds']:.2f}s, {r['backfill_cpu_us']:.1f} us/row CPU)",
        f"raw bulk   {r['raw_docs_per_s']:8.0f} docs/s  ({r['raw_docs']} docs, 1 in flight)",
        f"ratio      {r['ratio']:8.2f}  target >= {RATIO_TARGET}: {met} (median of {rounds})",
        *_floor(r),
        *_reference(r),
    ])  # fmt: skip


def _floor(r: dict[str, Any]) -> list[str]:
    if "floor_docs_per_s" not in r:
        return []
    return [
        f"floor      {r['floor_docs_per_s']:8.0f} docs/s  (the fixed libraries only, once after"
        f" the rounds: bench/children_floor.py; floor/raw {r['floor_ratio']:.2f}; CPU us/row"
        f" backfill {r['backfill_cpu_us']:.1f}, floor {r['floor_cpu_us']:.1f})"
    ]


def _reference(r: dict[str, Any]) -> list[str]:
    ref = r.get("reference")
    if ref is None:
        return []
    rounds = ", ".join(f"{x:.2f}" for x in ref["round_ratios"])
    return [
        f"reference, the same articles without children or lookup: backfill"
        f" {ref['backfill_docs_per_s']:.0f} docs/s, raw {ref['raw_docs_per_s']:.0f} docs/s,"
        f" ratio {ref['ratio']:.2f} (median of {rounds})"
    ]


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main("bench.children_bench", argv, parse_args, _child, run, render)


def _child(o: Options) -> Coroutine[Any, Any, None] | None:
    return None if o.compare_child is None else compare_child(o.compare_child)


if __name__ == "__main__":
    sys.exit(main())
