"""No credential in any output, on the real stack: `searchsync config check`, `index init` and
`run` with distinctive secrets, a poison message dead-lettered, then every output searched.

The secrets, each used for real where the stack allows it:

- MySQL: a throwaway user with the consumer user's grants and a password holding a quote (so
  its JSON-escaped form is searched too); the consumer reads the truth and writes its
  projection state with it;
- Elasticsearch: the secured node's (`tests.integration.secure_es`) ``elastic`` password, over
  HTTPS: index init and the consumer's writes authenticate with it;
- Kafka: the shared broker speaks PLAINTEXT, where SASL settings are refused at load (they would
  do nothing); the Kafka secret is a librdkafka password in ``[kafka] extra``
  (``ssl.keystore.password``), which every client receives and a plaintext connection ignores.
  SASL passwords are covered by tests/unit/test_secrets.py.

Searched: stdout and stderr of each command (the run's JSON log lines included), the /metrics
text, and the dead letter's bytes (value, key, headers).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from searchsync.dlq.record import decode_record
from searchsync.events import encode_json
from searchsync.types import Operation, ThinEvent

from tests.integration.conftest import KAFKA
from tests.integration.kafkatools import fresh_topics
from tests.integration.secure_es import REPO, SecureNode, stack_env
from tests.timing import deadline as deadline_after

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


def _variants(secret: str) -> tuple[str, ...]:
    return (secret, orjson.dumps(secret).decode()[1:-1], repr(secret)[1:-1])


def _leaks(where: str, data: bytes, secrets_: tuple[str, ...]) -> list[str]:
    return [
        f"{where}: {form!r}"
        for secret in secrets_
        for form in _variants(secret)
        if form.encode() in data
    ]


def _root_sql(sql: str) -> str:
    socket_path = stack_env()["MYSQL_SOCKET"]
    done = subprocess.run(
        ["mariadb", f"--socket={socket_path}", "-uroot", "-N", "-B", "-e", sql],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"root SQL failed: {done.stderr}"
    return done.stdout


_CONSUMER_TABLES = frozenset(
    {
        "wiki_page",
        "search_revision_floor",
        "search_outbox",
        "search_projection_state",
        "search_dlq_replay",
        "search_rebuild_state",
        "search_repair_epoch",
        "search_repair_bucket",
        "search_topic_lineage",
        "search_partition_owner",
    }
)


@pytest.fixture
def mysql_user() -> Iterator[tuple[str, str]]:
    """A consumer user of its own, same grants as ``searchsync``, a distinctive password."""
    user = f"sec_{uuid.uuid4().hex[:10]}"
    password = f'my"Sq1-{secrets.token_hex(6)}'
    grants = _root_sql("SHOW GRANTS FOR 'searchsync'@'%'").splitlines()
    _root_sql(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'")
    try:
        for grant in grants:  # the consumer's tables (deploy/local/migrate.sh), not leftovers
            table = grant.split(" ON ", 1)[1].split(" TO ", 1)[0].rsplit(".", 1)[-1].strip("`")
            if table in _CONSUMER_TABLES:
                _root_sql(grant.replace("`searchsync`@`%`", f"`{user}`@`%`"))
        yield user, password
    finally:
        _root_sql(f"DROP USER IF EXISTS '{user}'@'%'")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "searchsync", *argv],
        cwd=REPO, env={**os.environ, **env}, capture_output=True, timeout=120, check=False,
    )  # fmt: skip


def _metrics(port: int) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        body: bytes = response.read()
    return body


def _assigned(port: int) -> bool:
    try:
        text = _metrics(port).decode()
    except OSError:
        return False
    return any(
        line.startswith("searchsync_partitions_assigned ") and float(line.split()[1]) > 0
        for line in text.splitlines()
    )


def _wait(check: object, deadline_s: float, what: str) -> None:
    assert callable(check)
    deadline = deadline_after(deadline_s)
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {deadline_s}s waiting for: {what}")
        time.sleep(0.2)


def _dead_letters(topic: str) -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    reader = Consumer(
        {"bootstrap.servers": KAFKA, "group.id": f"sec-read-{uuid.uuid4().hex[:6]}"}
        | {"enable.auto.commit": False, "enable.partition.eof": True}
    )
    try:
        reader.assign([TopicPartition(topic, 0, 0)])
        out = []
        deadline = deadline_after(10)
        while time.monotonic() < deadline:
            msg = reader.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                break  # end of the partition
            out.append((msg.value() or b"", msg.key() or b"", list(msg.headers() or [])))
        return out
    finally:
        reader.close()


def _wait_for_dead_letter(topic: str) -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    found: list[tuple[bytes, bytes, list[tuple[str, bytes]]]] = []

    def arrived() -> bool:
        found[:] = _dead_letters(topic)
        return bool(found)

    _wait(arrived, 60, f"a dead letter on {topic}")
    return found


async def test_no_secret_in_config_check_logs_metrics_or_dead_letters(
    secure_es: SecureNode, mysql_user: tuple[str, str], tmp_path: Path
) -> None:
    user, mysql_password = mysql_user
    kafka_secret = f"kafka-Keystore-{secrets.token_hex(6)}"
    all_secrets = (mysql_password, secure_es.password, kafka_secret)
    u = uuid.uuid4().hex[:8]
    source, dlq = f"it-sec-{u}-wiki_page", f"it-sec-{u}.dlq"
    metrics_port = _free_port()
    env = {
        "SEARCHSYNC_KAFKA_TOPICS": source,
        "SEARCHSYNC_RELAY_TOPIC_TEMPLATE": f"it-sec-{u}-{{type}}",  # config check: the type's topic
        "SEARCHSYNC_KAFKA_GROUP_ID": f"it-sec-{u}",
        "SEARCHSYNC_KAFKA_DLQ_TOPIC": dlq,
        "SEARCHSYNC_KAFKA_AUTO_OFFSET_RESET": "earliest",
        "SEARCHSYNC_KAFKA_SESSION_TIMEOUT_MS": "6000",
        "SEARCHSYNC_KAFKA_EXTRA": orjson.dumps({"ssl.keystore.password": kafka_secret}).decode(),
        "SEARCHSYNC_MYSQL_USER": user,
        "SEARCHSYNC_MYSQL_PASSWORD": mysql_password,
        "SEARCHSYNC_ELASTICSEARCH_HOSTS": secure_es.url,
        "SEARCHSYNC_ELASTICSEARCH_CA_CERTS": str(secure_es.ca_certs),
        "SEARCHSYNC_ELASTICSEARCH_USERNAME": secure_es.username,
        "SEARCHSYNC_ELASTICSEARCH_PASSWORD": secure_es.password,
        "SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": f"itsec{u}",
        "SEARCHSYNC_OBSERVABILITY_METRICS_PORT": str(metrics_port),
        "SEARCHSYNC_PIPELINE_SHUTDOWN_DEADLINE_S": "10",
        "SEARCHSYNC_PIPELINE_LAG_POLL_INTERVAL_S": "1",
    }
    outputs: dict[str, bytes] = {}
    with fresh_topics(KAFKA, [(source, 1), (dlq, 1)]):
        for name, argv in (
            ("config check", ("config", "check")),
            ("config check --json", ("config", "check", "--json")),
            ("index init", ("index", "init")),
        ):
            done = await asyncio.to_thread(_cli, env, *argv)
            assert done.returncode == 0, (name, done.stderr)
            outputs[f"{name} stdout"], outputs[f"{name} stderr"] = done.stdout, done.stderr

        log_path = tmp_path / "run.log"
        with log_path.open("wb") as log:
            run = subprocess.Popen(  # noqa: ASYNC220  (returns at once)
                [sys.executable, "-m", "searchsync", "run"],
                cwd=REPO, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            await asyncio.to_thread(
                _wait, lambda: run.poll() is None and _assigned(metrics_port), 90, "assignment"
            )
            page = f"sec-{u}"
            producer = Producer({"bootstrap.servers": KAFKA})
            producer.produce(source, key=b"poison", value=b"{not json")
            event = ThinEvent(str(uuid.uuid4()), "wiki_page", page, Operation.UPSERT, 5)
            producer.produce(source, key=page.encode(), value=encode_json(event))
            assert producer.flush(30) == 0
            letters = await asyncio.to_thread(_wait_for_dead_letter, dlq)
            # the event for a row that does not exist: read as the throwaway MySQL user,
            # written over HTTPS with the password as a tombstone at revision 5
            await asyncio.to_thread(
                _wait,
                lambda: _tombstones(_metrics(metrics_port)) >= 1,
                60,
                "the tombstone written",
            )
            outputs["metrics"] = await asyncio.to_thread(_metrics, metrics_port)
        finally:
            run.send_signal(signal.SIGTERM)
            code = await asyncio.to_thread(run.wait, 60)
        assert code == 0, log_path.read_text()
    outputs["run log"] = log_path.read_bytes()
    for value, key, headers in letters:
        outputs["dead letter value"] = outputs.get("dead letter value", b"") + value
        outputs["dead letter key"] = outputs.get("dead letter key", b"") + key
        for name, raw in headers:
            outputs["dead letter headers"] = (
                outputs.get("dead letter headers", b"") + name.encode() + (raw or b"")
            )
    leaks = [leak for where, data in outputs.items() for leak in _leaks(where, data, all_secrets)]
    assert leaks == [], leaks
    # and what was searched is the real thing: the settings, the log lines, the dead letter
    assert b'mysql.password = "***"' in outputs["config check stdout"]
    assert b'elasticsearch.password = "***"' in outputs["config check stdout"]
    (record,) = [decode_record(value) for value, _, _ in letters]
    assert record.last_error_code == "BAD_JSON" and record.payload == b"{not json"
    assert b"BAD_JSON" in outputs["run log"]  # the log lines are there to be searched
    assert b"searchsync starting" in outputs["run log"]


def _tombstones(metrics: bytes) -> float:
    for line in metrics.decode().splitlines():
        if line.startswith("es_tombstone_written_total "):
            return float(line.split()[1])
    return 0.0
