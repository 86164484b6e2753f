"""Fixtures for tests against the real local stack (`make up`).

A service that does not answer is a failure with a message that says what to run, never a skip.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator

import pytest

from tests.integration.conftest_mysql import *  # noqa: F403  (MariaDB fixtures)
from tests.integration.secure_es import secure_es  # noqa: F401  (the secured ES node)

KAFKA = os.environ.get("SEARCHSYNC_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
ES_URL = os.environ.get("SEARCHSYNC_ELASTICSEARCH_HOSTS", "http://127.0.0.1:9200").split(",")[0]
CONNECT_URL = os.environ.get("SEARCHSYNC_CONNECT_URL", "http://127.0.0.1:8083")


def _port_open(hostport: str) -> bool:
    host, _, port = hostport.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session", autouse=True)
def _stack_is_up() -> None:
    """Every integration test needs the real services: fail fast and say how to start them."""
    es_hostport = ES_URL.split("://", 1)[-1].rstrip("/")
    missing = [
        name
        for name, addr in (
            ("Kafka", KAFKA.split(",")[0]),
            ("Elasticsearch", es_hostport),
            ("Kafka Connect", CONNECT_URL.split("://", 1)[-1]),
            (
                "MariaDB",
                f"{os.environ.get('SEARCHSYNC_MYSQL_HOST', '127.0.0.1')}:"
                f"{os.environ.get('SEARCHSYNC_MYSQL_PORT', '3306')}",
            ),
        )
        if not _port_open(addr)
    ]
    if missing:
        pytest.fail(
            f"the local stack is not running ({', '.join(missing)} unreachable): run `make up`",
            pytrace=False,
        )


@pytest.fixture
def unique() -> Iterator[str]:
    """A short unique prefix, so tests never collide on shared tables and topics."""
    yield uuid.uuid4().hex[:10]
