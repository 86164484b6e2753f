"""The `searchsync` command against the real stack, run as a subprocess like an operator would."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from tests.integration.conftest import ES_URL, KAFKA
from tests.integration.kafkatools import fresh_topics, kafka_admin

pytestmark = pytest.mark.integration


def _searchsync(
    *argv: str, env: dict[str, str], deadline_s: float = 120
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("SEARCHSYNC_")}
    full_env |= {
        "SEARCHSYNC_KAFKA_BOOTSTRAP_SERVERS": KAFKA,
        "SEARCHSYNC_ELASTICSEARCH_HOSTS": ES_URL,
    }
    full_env |= env  # `env` may point a service elsewhere
    return subprocess.run(
        [sys.executable, "-m", "searchsync", *argv],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=deadline_s,
        check=False,
    )


def _ok_json(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return orjson.loads(result.stdout)


@pytest.fixture
def prefix() -> Iterator[str]:
    name = f"clitest{uuid.uuid4().hex[:10]}"
    yield name
    import urllib.request

    request = urllib.request.Request(f"{ES_URL}/{name}_*", method="DELETE")
    with urllib.request.urlopen(request, timeout=30):
        pass


def test_index_init_twice(prefix: str) -> None:
    env = {"SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": prefix}
    first = _ok_json(_searchsync("index", "init", "--json", env=env))
    assert first["action"] == "created"
    assert first["alias"] == f"{prefix}_wiki_page" and first["index"] == f"{prefix}_wiki_page_v1"
    second = _ok_json(_searchsync("index", "init", "--json", env=env))
    assert second["action"] == "exists"
    assert "already exists" in second["message"]
    described = _ok_json(_searchsync("index", "describe", "--json", env=env))
    assert described == [
        {
            "aggregate_type": "wiki_page",
            "alias": f"{prefix}_wiki_page",
            "exists": True,
            "indices": [f"{prefix}_wiki_page_v1"],
            "write_index": f"{prefix}_wiki_page_v1",
            "read_alias": f"{prefix}_wiki_page_live",
            "read_indices": [f"{prefix}_wiki_page_v1"],
        }
    ]


def test_config_check_exit_codes() -> None:
    assert _searchsync("config", "check", env={}).returncode == 0
    bad = _searchsync("config", "check", env={"SEARCHSYNC_MYSQL_PORT": "99999"})
    assert bad.returncode == 2
    assert bad.stderr.startswith("config error: mysql.port: expected an integer in 1..65535")
    unknown = _searchsync("config", "check", env={"SEARCHSYNC_MYSQL_COLOUR": "red"})
    assert unknown.returncode == 2 and "mysql.colour" in unknown.stderr


def test_offsets_show_for_a_fresh_group() -> None:
    topic = f"cli-offsets-{uuid.uuid4().hex[:10]}"
    with fresh_topics(KAFKA, [(topic, 2)]):
        env = {
            "SEARCHSYNC_KAFKA_GROUP_ID": f"cli-fresh-{uuid.uuid4().hex[:10]}",
            "SEARCHSYNC_KAFKA_TOPICS": topic,
        }
        out = _ok_json(_searchsync("offsets", "show", "--json", env=env))
        assert out["group"] == env["SEARCHSYNC_KAFKA_GROUP_ID"]
        assert [
            (p["topic"], p["partition"], p["committed"], p["lag"]) for p in out["partitions"]
        ] == [
            (topic, 0, None, 0),
            (topic, 1, None, 0),
        ]
        assert out["total_lag"] == 0


def test_dlq_inspect_on_an_empty_topic() -> None:
    topic = f"cli-dlq-{uuid.uuid4().hex[:10]}"
    with fresh_topics(KAFKA, [(topic, 1)]):
        env = {"SEARCHSYNC_KAFKA_DLQ_TOPIC": topic}
        assert _ok_json(_searchsync("dlq", "inspect", "--json", env=env)) == []
        replay = _ok_json(_searchsync("dlq", "replay", "--json", env=env))  # a plan by default
        assert replay["dry_run"] is True and replay["scanned"] == 0 and replay["replayed"] == []


def test_before_the_first_dead_letter_the_dlq_commands_say_so_and_exit_0() -> None:
    env = {"SEARCHSYNC_KAFKA_DLQ_TOPIC": f"cli-dlq-none-{uuid.uuid4().hex[:10]}"}
    human = _searchsync("dlq", "inspect", env=env)
    assert human.returncode == 0, human.stderr
    assert human.stdout == f"no dead letters in {env['SEARCHSYNC_KAFKA_DLQ_TOPIC']}\n"
    assert _ok_json(_searchsync("dlq", "inspect", "--json", env=env)) == []
    replay = _searchsync("dlq", "replay", "--execute", env=env)
    assert replay.returncode == 0, replay.stderr
    assert "no dead letters to replay" in replay.stdout
    report = _ok_json(_searchsync("dlq", "replay", "--execute", "--json", env=env))
    assert (report["scanned"], report["replayed"]) == (0, [])
    assert not kafka_admin(KAFKA).topic_exists(env["SEARCHSYNC_KAFKA_DLQ_TOPIC"])
