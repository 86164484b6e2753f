"""Secrets never show: distinctive passwords set in every secret setting, then every output
searched for them (reprs, `config check`, log lines with exceptions, CLI errors), while the
clients still receive them (librdkafka config, the Elasticsearch client, the MySQL TLS context).

The same search on the real stack: tests/integration/test_secrets_real.py.
"""

from __future__ import annotations

import base64
import io
import logging
import shutil
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import certifi
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from runtime_fakes import Fakes
from searchsync.cli import main
from searchsync.config import Secret, Settings, load_settings, scrub_credentials, scrub_known
from searchsync.errors import ConfigError
from searchsync.exit_codes import ExitCode
from searchsync.kafka.config import member_config
from searchsync.mysql.pool import tls_context
from searchsync.observability.logs import JsonFormatter, configure_logging
from searchsync.resources import KafkaClients
from searchsync.search.client import make_es_client

MYSQL_PW = 'my-Sq1"pw\\x7Q'  # a quote and a backslash: JSON escapes them
ES_PW = "es-Pw-4cc35s-91x"
ES_KEY = "es-ApiKey-Zk3y-77"
SASL_PW = "kafka-Sasl-Pw-55q"
KEY_PW = "kafka-KeyPass-0o9"
KEYSTORE_PW = "kafka-Keystore-3e3"
ALL = (MYSQL_PW, ES_PW, ES_KEY, SASL_PW, KEY_PW, KEYSTORE_PW)


def _variants(secret: str) -> tuple[str, ...]:
    """The secret as it is and as it looks inside JSON or a Python repr."""
    return (secret, orjson.dumps(secret).decode()[1:-1], repr(secret)[1:-1])


def assert_no_secret(text: str, secrets: tuple[str, ...] = ALL) -> None:
    for secret in secrets:
        for form in _variants(secret):
            assert form not in text, f"a secret leaked: {form!r}"


@pytest.fixture
def pem_files(tmp_path: Path) -> dict[str, str]:
    """Files where the settings want paths; the CA is a real bundle (certifi's, which
    elastic-transport depends on), since the Elasticsearch client loads it at once."""
    files = {}
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("-----BEGIN CERTIFICATE-----\n")
        files[name] = str(tmp_path / name)
    shutil.copy(certifi.where(), files["ca.pem"])
    return files


def _env(pem: dict[str, str], *, es_auth: str = "basic") -> dict[str, str]:
    env = {
        "SEARCHSYNC_MYSQL_PASSWORD": MYSQL_PW,
        "SEARCHSYNC_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "SEARCHSYNC_KAFKA_SASL_MECHANISM": "scram-sha-512",
        "SEARCHSYNC_KAFKA_SASL_USERNAME": "searchsync",
        "SEARCHSYNC_KAFKA_SASL_PASSWORD": SASL_PW,
        "SEARCHSYNC_KAFKA_SSL_CA_LOCATION": pem["ca.pem"],
        "SEARCHSYNC_KAFKA_SSL_CERTIFICATE_LOCATION": pem["cert.pem"],
        "SEARCHSYNC_KAFKA_SSL_KEY_LOCATION": pem["key.pem"],
        "SEARCHSYNC_KAFKA_SSL_KEY_PASSWORD": KEY_PW,
        "SEARCHSYNC_KAFKA_EXTRA": orjson.dumps({"ssl.keystore.password": KEYSTORE_PW}).decode(),
        "SEARCHSYNC_ELASTICSEARCH_HOSTS": "https://es-1:9200",
        "SEARCHSYNC_ELASTICSEARCH_CA_CERTS": pem["ca.pem"],
    }
    if es_auth == "basic":
        env["SEARCHSYNC_ELASTICSEARCH_USERNAME"] = "searchsync"
        env["SEARCHSYNC_ELASTICSEARCH_PASSWORD"] = ES_PW
    else:
        env["SEARCHSYNC_ELASTICSEARCH_API_KEY"] = ES_KEY
    return env


@pytest.fixture
def settings(pem_files: dict[str, str]) -> Settings:
    return load_settings(_env(pem_files))


def test_reprs_and_the_redacted_view_hold_no_secret(pem_files: dict[str, str]) -> None:
    for auth in ("basic", "api_key"):
        settings = load_settings(_env(pem_files, es_auth=auth))
        assert_no_secret(repr(settings))
        assert_no_secret(str(settings))
        assert_no_secret(orjson.dumps(settings.redacted()).decode())
        assert_no_secret(repr(settings.kafka.extra))
        assert settings.redacted()["kafka"]["sasl_password"] == "***"


def test_every_kafka_client_receives_tls_and_sasl(settings: Settings) -> None:
    config = member_config(settings.kafka)
    assert config["security.protocol"] == "sasl_ssl"
    assert config["sasl.mechanism"] == "SCRAM-SHA-512"
    assert config["sasl.username"] == "searchsync"
    assert config["sasl.password"] == SASL_PW
    assert config["ssl.key.password"] == KEY_PW
    assert config["ssl.keystore.password"] == KEYSTORE_PW
    assert config["ssl.ca.location"].endswith("ca.pem")
    assert settings.kafka.client_config().items() <= config.items()  # producer, admin, readers


async def test_the_es_client_sends_basic_auth_or_the_api_key_and_trusts_the_ca(
    pem_files: dict[str, str],
) -> None:
    basic = make_es_client(load_settings(_env(pem_files)))
    keyed = make_es_client(load_settings(_env(pem_files, es_auth="api_key")))
    try:
        token = base64.b64encode(f"searchsync:{ES_PW}".encode()).decode()
        assert basic._headers["authorization"] == f"Basic {token}"
        assert keyed._headers["authorization"] == f"ApiKey {ES_KEY}"
        for client in (basic, keyed):
            (node,) = client.transport.node_pool.all()
            assert node.config.ca_certs == pem_files["ca.pem"]
            assert node.config.verify_certs is True and node.config.scheme == "https"
            assert_no_secret(repr(client))
    finally:
        await basic.close()
        await keyed.close()


def test_config_check_prints_no_secret(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    pem_files: dict[str, str],
) -> None:
    for auth in ("basic", "api_key"):
        for name, value in _env(pem_files, es_auth=auth).items():
            monkeypatch.setenv(name, value)
        for argv in (["config", "check"], ["config", "check", "--json"]):
            assert main(argv) == ExitCode.OK
            captured = capsys.readouterr()
            assert_no_secret(captured.out + captured.err)
            assert "sasl_password" in captured.out and "***" in captured.out
        monkeypatch.delenv("SEARCHSYNC_ELASTICSEARCH_USERNAME", raising=False)
        monkeypatch.delenv("SEARCHSYNC_ELASTICSEARCH_PASSWORD", raising=False)


@pytest.fixture
def root_logging() -> Iterator[None]:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    yield
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def test_run_masks_configured_secrets_in_every_log_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    pem_files: dict[str, str],
    root_logging: None,
) -> None:
    for name, value in _env(pem_files).items():
        monkeypatch.setenv(name, value)

    async def careless_consumer(runtime: Any, stop: Any) -> int:
        settings: Settings = runtime.settings
        log = logging.getLogger("careless")
        dsn = f"mysql://searchsync:{settings.mysql.password.reveal()}@db:3306/app"
        try:
            raise RuntimeError(f"could not connect to {dsn}")
        except RuntimeError:
            log.exception("connect failed", extra={"dsn": dsn, "config": {"token": ES_PW}})
        log.warning("librdkafka said %s", settings.kafka.client_config())
        log.warning("basic auth %s", (settings.elasticsearch.username, ES_PW))
        return 0

    assert main(["run"], runtime=Fakes(consumer=careless_consumer)) == ExitCode.OK
    err = capsys.readouterr().err
    lines = [orjson.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert len(lines) == 3 and "RuntimeError" in str(lines[0]["exc"])  # the lines are there
    assert_no_secret(err)


def test_a_failing_command_prints_no_secret(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], pem_files: dict[str, str]
) -> None:
    for name, value in _env(pem_files).items():
        monkeypatch.setenv(name, value)

    def broken_admin(config: dict[str, Any], **_: Any) -> Any:
        raise RuntimeError(f"cannot reach kafka with {config}")

    code = main(
        ["offsets", "reset", "--to", "latest", "--execute"],
        runtime=Fakes(kafka=KafkaClients(admin=broken_admin)),
    )
    assert code == ExitCode.FAILURE
    captured = capsys.readouterr()
    assert "cannot reach kafka" in captured.err
    assert_no_secret(captured.out + captured.err)


def test_urls_with_credentials_are_refused_without_echoing_the_password() -> None:
    for key, env in (
        ("elasticsearch.hosts", "SEARCHSYNC_ELASTICSEARCH_HOSTS"),
        ("connect.url", "SEARCHSYNC_CONNECT_URL"),
    ):
        with pytest.raises(ConfigError) as caught:
            load_settings({env: f"https://elastic:{ES_PW}@es-1:9200"})
        assert caught.value.key == key
        assert_no_secret(str(caught.value) + repr(caught.value.got))
        assert "elastic:***@es-1" in str(caught.value.got)


def test_secret_settings_refused_where_they_would_be_ignored() -> None:
    cases = {
        "SEARCHSYNC_KAFKA_SASL_PASSWORD": "kafka.sasl_password",
        "SEARCHSYNC_KAFKA_SSL_KEY_PASSWORD": "kafka.ssl_key_password",
    }
    for env, key in cases.items():
        with pytest.raises(ConfigError) as caught:
            load_settings({env: SASL_PW})  # plaintext: SASL and TLS keys would do nothing
        assert caught.value.key == key and "security_protocol" in caught.value.expected
        assert_no_secret(str(caught.value))
    with pytest.raises(ConfigError) as caught:
        load_settings({"SEARCHSYNC_KAFKA_EXTRA": orjson.dumps({"sasl.password": "x"}).decode()})
    assert caught.value.key == "kafka.extra.sasl.password"
    assert caught.value.expected == "kafka.sasl_password instead"
    with pytest.raises(ConfigError) as caught:
        load_settings(
            {"SEARCHSYNC_ELASTICSEARCH_API_KEY": ES_KEY, "SEARCHSYNC_ELASTICSEARCH_USERNAME": "u"}
        )
    assert caught.value.key == "elasticsearch.api_key"
    assert_no_secret(str(caught.value))


def test_formatter_masks_known_secrets_and_url_passwords() -> None:
    formatter = JsonFormatter((MYSQL_PW, ES_KEY))
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "msg %s", (MYSQL_PW,), None)
    record.url = f"https://u:{ES_PW}@h:9200/"
    record.nested = {"list": [ES_KEY]}
    line = formatter.format(record)
    assert_no_secret(line)
    parsed = orjson.loads(line)  # still one valid JSON object
    assert parsed["url"] == "https://u:***@h:9200/"


def test_configure_logging_takes_the_secrets(root_logging: None) -> None:
    out = io.StringIO()
    configure_logging("info", out, secrets=(SASL_PW,))
    logging.getLogger("y").info("sasl %s", SASL_PW)
    assert_no_secret(out.getvalue(), (SASL_PW,))
    assert "***" in out.getvalue()


def test_secret_values_lists_the_configured_secrets_but_not_the_public_default(
    settings: Settings,
) -> None:
    assert set(settings.secret_values()) == {MYSQL_PW, ES_PW, SASL_PW, KEY_PW, KEYSTORE_PW}
    assert Settings().secret_values() == ()  # the local stack's "searchsync" stays readable


_USER = st.text(
    st.characters(min_codepoint=33, max_codepoint=126, exclude_characters=":/@\"'\\ \t\n\r"),
    max_size=10,
)
_PASSWORD = st.text(
    st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="/@\"'\\"),
    min_size=1,
    max_size=20,
)


@given(
    scheme=st.sampled_from(["http", "https", "mysql", "kafka+ssl"]),
    user=_USER,
    password=_PASSWORD,
    before=st.text(max_size=10),
)
def test_scrub_credentials_removes_any_url_password(
    scheme: str, user: str, password: str, before: str
) -> None:
    text = f"{before} {scheme}://{user}:{password}@host:1/p"
    scrubbed = scrub_credentials(text)
    assert f"{scheme}://{user}:***@host:1/p" in scrubbed
    assert scrub_credentials(scrubbed) == scrubbed  # idempotent


_NO_STAR = st.characters(exclude_characters="*")


@given(
    st.text(_NO_STAR, min_size=4, max_size=20),
    st.text(_NO_STAR, max_size=30),
    st.text(_NO_STAR, max_size=30),
)
def test_scrub_known_removes_every_occurrence(secret: str, left: str, right: str) -> None:
    scrubbed = scrub_known(f"{left}{secret}{right}{secret}", [secret])
    assert "***" in scrubbed and secret not in scrubbed


def test_secret_equality_and_hash_do_not_reveal() -> None:
    assert Secret("a") == Secret("a") and Secret("a") != Secret("b")
    assert f"{Secret(MYSQL_PW)}" == "***" and f"{Secret(MYSQL_PW)!r}" == "***"


def test_mysql_tls_context_follows_ssl_mode() -> None:
    assert tls_context(load_settings({}).mysql) is None
    ca = {"SEARCHSYNC_MYSQL_SSL_CA": certifi.where()}
    verify_ca = tls_context(load_settings({**ca, "SEARCHSYNC_MYSQL_SSL_MODE": "verify_ca"}).mysql)
    identity = tls_context(
        load_settings({**ca, "SEARCHSYNC_MYSQL_SSL_MODE": "VERIFY_IDENTITY"}).mysql
    )
    assert verify_ca is not None and identity is not None
    assert verify_ca.verify_mode is ssl.CERT_REQUIRED and not verify_ca.check_hostname
    assert identity.verify_mode is ssl.CERT_REQUIRED and identity.check_hostname
    with pytest.raises(ConfigError) as caught:  # a CA without TLS would do nothing
        load_settings(ca)
    assert caught.value.key == "mysql.ssl_ca"
    with pytest.raises(ConfigError) as caught:
        load_settings({"SEARCHSYNC_MYSQL_SSL_MODE": "verify_ca", "SEARCHSYNC_MYSQL_SSL_CA": "/no"})
    assert caught.value.key == "mysql.ssl_ca" and "existing" in caught.value.expected
