"""searchsync's Elasticsearch client against a node with x-pack security on, over HTTPS.

The node (`tests.integration.secure_es`) is started by this session, verifies nothing but its
own certificate chain, and authenticates every request. Through the settings a user writes
(``[elasticsearch] hosts``, ``ca_certs``, ``username``/``password`` or ``api_key``) and
`make_es_client`: index init, a write through the alias and a read back; a wrong password and an
API key the node does not know are refused with 401 and a message naming the settings; a client
without the CA refuses the node's certificate.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from elastic_transport import TlsError
from elasticsearch import AuthenticationException
from elasticsearch import ConnectionError as EsConnectionError
from searchsync.config import Settings, load_settings
from searchsync.projection import default_registry
from searchsync.search.admin import InitAction, init_index
from searchsync.search.client import describe_auth_error, make_es_client
from searchsync.search.es_index import EsIndex
from searchsync.search.sink import IndexOp, OutcomeKind, Sink

from tests.integration.secure_es import REPO, SecureNode

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


def _env(node: SecureNode, prefix: str, **auth: str) -> dict[str, str]:
    env = {
        "SEARCHSYNC_ELASTICSEARCH_HOSTS": node.url,
        "SEARCHSYNC_ELASTICSEARCH_CA_CERTS": str(node.ca_certs),
        "SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": prefix,
        "SEARCHSYNC_ELASTICSEARCH_REQUEST_TIMEOUT_S": "30",
    }
    env.update({f"SEARCHSYNC_ELASTICSEARCH_{k.upper()}": v for k, v in auth.items()})
    return env


def _basic(node: SecureNode, prefix: str) -> Settings:
    return load_settings(_env(node, prefix, username=node.username, password=node.password))


async def test_index_init_write_and_read_through_the_alias_over_https(
    secure_es: SecureNode, unique: str
) -> None:
    settings = _basic(secure_es, f"sec{unique}")
    projector = default_registry().get("wiki_page")
    alias = settings.alias("wiki_page")
    es = make_es_client(settings)
    try:
        init = await init_index(
            es, alias, projector.mapping, schema_version=projector.schema_version
        )
        assert init.action is InitAction.CREATED and init.index == f"{alias}_v1"
        row = {
            "id": f"{unique}-p1",
            "title": "secured",
            "content": "over https",
            "relations_json": "{}",
            "revision": 3,
            "deleted_at": None,
        }
        document = projector.project(row)
        (outcome,) = await Sink(EsIndex(es)).write([IndexOp.from_document(alias, document)])
        assert outcome.kind is OutcomeKind.APPLIED, outcome
        stored = await es.get(index=alias, id=document.doc_id)
        assert stored["_index"] == f"{alias}_v1" and stored["_version"] == 3
        assert document.matches(stored["_source"])
    finally:
        await es.indices.delete(index=f"{alias}_v1", ignore_unavailable=True)
        await es.close()


@pytest.mark.parametrize(
    "auth",
    [
        pytest.param({"username": "elastic", "password": "not-the-password"}, id="bad-password"),
        pytest.param({"api_key": "bm90LWEta2V5Om5vLXNlY3JldA=="}, id="unknown-api-key"),
        pytest.param({}, id="no-credentials"),
    ],
)
async def test_refused_credentials_are_a_401_with_a_message_naming_the_settings(
    secure_es: SecureNode, unique: str, auth: dict[str, str]
) -> None:
    settings = load_settings(_env(secure_es, f"sec{unique}", **auth))
    es = make_es_client(settings)
    try:
        with pytest.raises(AuthenticationException) as caught:
            await es.indices.exists_alias(name=settings.alias("wiki_page"))
    finally:
        await es.close()
    assert caught.value.status_code == 401
    message = describe_auth_error(caught.value)
    assert message is not None and "elasticsearch.api_key" in message
    assert "elasticsearch.password" in message


async def test_a_client_without_the_ca_refuses_the_node_certificate(
    secure_es: SecureNode, unique: str
) -> None:
    env = _env(secure_es, f"sec{unique}", username=secure_es.username, password="x")
    del env["SEARCHSYNC_ELASTICSEARCH_CA_CERTS"]  # the system store does not know the test CA
    es = make_es_client(load_settings(env))
    try:
        with pytest.raises(EsConnectionError) as caught:
            await es.indices.exists_alias(name="anything")
    finally:
        await es.close()
    assert isinstance(caught.value, TlsError) or "CERTIFICATE_VERIFY_FAILED" in str(caught.value)


async def test_the_cli_initialises_the_index_and_names_the_settings_on_a_refusal(
    secure_es: SecureNode, unique: str
) -> None:
    prefix = f"sec{unique}"

    def index_init(**auth: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **_env(secure_es, prefix, **auth)}
        return subprocess.run(
            [sys.executable, "-m", "searchsync", "index", "init"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    refused = await asyncio.to_thread(index_init, api_key="bm90LWEta2V5Om5vLXNlY3JldA==")
    assert refused.returncode == 1, refused
    assert "Elasticsearch refused the credentials (401" in refused.stderr
    assert "elasticsearch.api_key" in refused.stderr
    done = await asyncio.to_thread(
        index_init, username=secure_es.username, password=secure_es.password
    )
    assert done.returncode == 0, done
    assert secure_es.password not in done.stdout + done.stderr
    assert "created" in done.stdout, done.stdout
