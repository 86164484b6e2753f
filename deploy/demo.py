"""`make demo`: searchsync's main job on the local stack, shown working.

1. index init (the alias and its v1 index), 2. the consumer in the background (`searchsync run`)
and `searchsync exporter` with its canary on (deploy/demo_canary.py), 3. a small stream of real
page writes through MariaDB transactions (the writer helper), 4. wait until every document equals
the projection of its row, 5. a search hit, an author renamed and found on all their articles
(deploy/demo_fanout.py), the lag, the canary's age, the metrics URLs. The consumer and the
exporter keep running; `make down` stops the stack, `kill $(cat .stack/run/searchsync.pid)` the
consumer alone.

``RELAY=polling make demo`` runs it without Kafka Connect (deploy/local/stack.sh does not start
it): `searchsync relay run` publishes the outbox instead (docs/relay.md), started here in the
background like the consumer (`.stack/run/relay.pid`, metrics on :9465).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from demo_canary import canary_age, ensure_canary_topic
from demo_fanout import demo_env, ensure_topics, fanout_demo
from searchsync.config import load_settings
from searchsync.devtools.loadgen import run_loadgen
from searchsync.mysql.pool import create_pool
from searchsync.mysql.truth import MysqlTruth
from searchsync.naming import read_alias_name
from searchsync.projection import registry_from_settings
from searchsync.read import Until, wait_for_revision
from searchsync.search.admin import init_index
from searchsync.search.client import make_es_client
from searchsync.search.es_index import EsIndex
from searchsync.writer import PageWriter

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / ".stack" / "run"
LOGS = REPO / ".stack" / "logs"


def say(msg: str) -> None:
    print(f"demo: {msg}", flush=True)


_last_progress = [0.0]


def progress(text: str, final: bool) -> None:
    """A line that redraws itself on a terminal; one line every few seconds elsewhere."""
    if sys.stdout.isatty():
        print(f"\rdemo: {text}", end="\n" if final else "", flush=True)
    elif final or time.monotonic() - _last_progress[0] > 3:
        _last_progress[0] = time.monotonic()
        say(text)


RELAY_METRICS_PORT = 9465


def running(name: str = "searchsync") -> bool:
    pid_file = RUN / f"{name}.pid"
    if not pid_file.exists():
        return False
    try:
        os.kill(int(pid_file.read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


def start(name: str, command: list[str], env: dict[str, str] | None = None) -> None:
    """`searchsync <command>` in the background, its pid in .stack/run/<name>.pid."""
    RUN.mkdir(parents=True, exist_ok=True)
    LOGS.mkdir(parents=True, exist_ok=True)
    log = (LOGS / f"{name}.log").open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "searchsync", *command],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )
    (RUN / f"{name}.pid").write_text(str(proc.pid))


def start_relay() -> bool:
    """With ``RELAY=polling``: make sure `searchsync relay run` publishes the outbox."""
    mode = os.environ.get("RELAY", "debezium")
    if mode not in ("debezium", "polling"):
        say(f"RELAY={mode}: expected polling or debezium")
        return False
    if mode == "debezium":
        return True
    if running("relay"):
        say("the relay is already running")
        return True
    start(
        "relay",
        ["relay", "run"],
        {
            "SEARCHSYNC_RELAY_ENABLED": "true",
            "SEARCHSYNC_RELAY_METRICS_PORT": str(RELAY_METRICS_PORT),
        },
    )
    say(
        f"started the polling relay instead of Kafka Connect (log {LOGS / 'relay.log'}, "
        f"metrics http://127.0.0.1:{RELAY_METRICS_PORT}/metrics)"
    )
    return True


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


async def main() -> int:
    demo_env(os.environ)
    settings = load_settings(os.environ)
    ex, obs = settings.exporter, settings.observability
    exporter_url = f"http://{ex.metrics_host}:{ex.metrics_port}/metrics"
    metrics_url = f"http://{obs.metrics_host}:{obs.metrics_port}/metrics"
    health_url = f"http://{obs.metrics_host}:{obs.metrics_port}/healthz"
    registry = registry_from_settings(settings.projection)
    projector = registry.get("wiki_page")
    alias = settings.alias("wiki_page")
    es = make_es_client(settings)
    pool_holder: dict[int, Any] = {}
    try:
        result = await init_index(
            es, alias, projector.mapping, schema_version=projector.schema_version
        )
        say(f"index init: {alias} -> {result.index} ({result.action.value})")
        for other in (registry.get(k) for k in registry.types() if k != "wiki_page"):
            alias_of = settings.alias(other.aggregate_type)
            await init_index(es, alias_of, other.mapping, schema_version=other.schema_version)
        if settings.canary.interval_s > 0 and http_get(exporter_url)[0] == 0:
            ensure_canary_topic(settings.kafka.bootstrap_servers)
            start("searchsync-exporter", ["exporter"])
            say(f"started searchsync exporter with the canary (log {LOGS}/searchsync-exporter.log)")

        ensure_topics(settings.kafka.bootstrap_servers)
        if not start_relay():
            return 1
        if running():
            say("the consumer is already running")
        elif http_get(health_url)[0] != 0:
            say(
                f"something else already listens on {health_url}: stop it, or set "
                "SEARCHSYNC_OBSERVABILITY_METRICS_PORT to a free port"
            )
            return 1
        else:
            start("searchsync", ["run"])
            say(f"started the consumer (log {LOGS / 'searchsync.log'})")
        deadline = time.monotonic() + 90
        while http_get(health_url)[0] != 200:
            if time.monotonic() > deadline:
                say(f"the consumer did not become ready; {health_url}: {http_get(health_url)}")
                say(f"see {LOGS / 'searchsync.log'}")
                return 1
            if not running():
                say(f"the consumer exited; see {LOGS / 'searchsync.log'}")
                return 1
            await asyncio.sleep(0.2)
        say(f"consumer ready: {health_url}")

        app_pool = pool_holder[0] = await create_pool(
            host=settings.mysql.host,
            port=settings.mysql.port,
            user=os.environ.get("APP_DB_USER", "searchsync_app"),
            password=os.environ.get("APP_DB_PASSWORD", "searchsync_app"),
            database=settings.mysql.database,
        )
        prefix = f"demo-{uuid.uuid4().hex[:6]}"
        say(f"writing pages {prefix}-* through MariaDB transactions (row + outbox event) ...")
        writer = PageWriter(app_pool)
        report = await run_loadgen(
            writer,
            pages=25,
            updates=250,
            concurrency=4,
            delete_ratio=0.1,
            seed=int(time.time()),
            id_prefix=prefix,
        )
        say(f"{report.changes} changes committed to {len(report.final_revisions)} pages")

        ids = sorted(report.final_revisions)
        truth = MysqlTruth(app_pool)
        rows = await truth.rows_by_id(projector, ids)
        expected = {i: projector.project(rows[i]) for i in ids}
        started = time.monotonic()
        while True:
            docs = (await es.mget(index=alias, ids=ids))["docs"]
            done = sum(
                1
                for d in docs
                if d.get("found")
                and d["_version"] == expected[d["_id"]].source_revision
                and expected[d["_id"]].matches(d["_source"])
            )
            progress(f"indexed and equal to MySQL: {done}/{len(ids)}", done == len(ids))
            if done == len(ids):
                break
            if time.monotonic() - started > 120:
                say(f"not converged after 120 s; see {LOGS / 'searchsync.log'}")
                return 1
            await asyncio.sleep(0.2)
        say(
            f"all {len(ids)} documents equal the projection of their rows "
            f"({time.monotonic() - started:.1f} s after the last write)"
        )

        live = next(i for i in ids if not expected[i].is_deleted)
        committed = time.monotonic()
        revision = await writer.update(live, content="read your writes")
        waited = await wait_for_revision(
            EsIndex(es), alias, live, revision, until=Until.SEARCHABLE, timeout_s=30
        )
        say(
            f"read-your-writes: {live} revision {revision} searchable "
            f"{time.monotonic() - committed:.3f} s after its commit ({waited.polls} polls, "
            "no forced refresh)"
            if waited.reached
            else f"read-your-writes: {waited.message}"
        )
        word = str(expected[live].body["title"]).split()[0]
        read_alias = read_alias_name(alias)  # what readers query: it never shows a tombstone
        hits = await es.search(
            index=read_alias,
            query={
                "bool": {
                    "must": [{"match": {"title": word}}],
                    "filter": [{"prefix": {"id": prefix}}],
                }
            },
            size=1,
            version=True,
        )
        top = hits["hits"]["hits"][0]
        say(
            f'search {read_alias} "{word}": {hits["hits"]["total"]["value"]} hits; top: '
            f'id={top["_id"]} version={top["_version"]} title="{top["_source"]["title"]}"'
        )
        related = "character:character_qixia"
        by_relation = await es.count(
            index=alias,
            query={
                "bool": {
                    "filter": [
                        {"term": {"relations.RELATED_CHARACTER": related}},
                        {"prefix": {"id": prefix}},
                    ]
                }
            },
        )
        count = by_relation["count"]
        say(f"pages related to {related} (a term query on relations.RELATED_CHARACTER): {count}")
        say(await fanout_demo(settings, es, app_pool))
        _, text = http_get(metrics_url)
        lag = sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("searchsync_consumer_lag{")
        )
        held = "searchsync_member_pending_events "
        pending = [line for line in text.splitlines() if line.startswith(held)]
        say(
            f"consumer lag (messages not yet committed, last sample): {lag:.0f}; "
            f"{pending[0] if pending else ''}"
        )
        say(await canary_age(lambda: http_get(exporter_url)[1]))
        say(f"metrics: {metrics_url}   health: {health_url}   exporter: {exporter_url}")
        say(
            "the consumer keeps running: `make down` stops everything, "
            "`kill $(cat .stack/run/searchsync.pid)` only the consumer"
        )
        return 0
    finally:
        await es.close()
        if pool_holder:
            pool_holder[0].close()
            await pool_holder[0].wait_closed()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
