"""Settings: local-stack defaults, TOML then env precedence, a named error for every bad value."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from searchsync.config import Secret, Settings, load_settings
from searchsync.errors import ConfigError
from searchsync.kafka.config import member_config
from searchsync.projection.topics import consumed_topics, subscription


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "searchsync.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _error(env: dict[str, str], toml: Path | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_settings(env, toml)
    return caught.value


def test_defaults_match_the_local_stack() -> None:
    settings = load_settings({})
    assert settings.kafka.bootstrap_servers == "127.0.0.1:9092"
    assert settings.kafka.group_id == "searchsync"
    assert settings.kafka.topics == ()  # one topic per registered type
    assert consumed_topics(settings) == ("outbox.event.wiki_page",)
    assert settings.kafka.dlq_topic == "searchsync.dlq"
    assert subscription(settings) == ["outbox.event.wiki_page"]
    assert (settings.mysql.host, settings.mysql.port) == ("127.0.0.1", 3306)
    assert (settings.mysql.user, settings.mysql.database) == ("searchsync", "searchsync")
    assert settings.mysql.password.reveal() == "searchsync"
    assert settings.elasticsearch.hosts == ("http://127.0.0.1:9200",)
    assert settings.elasticsearch.bulk_max_actions == 500
    assert settings.elasticsearch.bulk_max_bytes == 5 * 1024 * 1024
    assert settings.pipeline.max_event_bytes == 256 * 1024
    assert (settings.observability.metrics_host, settings.observability.metrics_port) == (
        "127.0.0.1",
        9464,
    )
    assert settings == Settings()


def test_the_fence_check_interval_is_a_few_seconds_and_can_be_set() -> None:
    assert load_settings({}).pipeline.fence_check_interval_s == 2.0
    env = {"SEARCHSYNC_PIPELINE_FENCE_CHECK_INTERVAL_S": "0.5"}
    assert load_settings(env).pipeline.fence_check_interval_s == 0.5


def test_the_session_timeout_lets_a_dead_members_partitions_move_within_the_recovery_budget() -> (
    None
):
    # kill -9 of the only member: its partitions move after the session timeout, then the new
    # member catches up; the recovery target: the lag back under 10 s within 30 s of the restart.
    default = load_settings({}).kafka
    assert 6_000 <= default.session_timeout_ms <= 15_000  # broker minimum .. half the budget
    assert member_config(default)["session.timeout.ms"] == default.session_timeout_ms
    env = {"SEARCHSYNC_KAFKA_SESSION_TIMEOUT_MS": "45000"}
    assert member_config(load_settings(env).kafka)["session.timeout.ms"] == 45_000


def test_settings_are_frozen() -> None:
    settings = load_settings({})
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.kafka.group_id = "x"  # type: ignore[misc]


def test_toml_then_env_override(tmp_path: Path) -> None:
    path = _toml(
        tmp_path,
        """
[kafka]
group_id = "from-toml"
bootstrap_servers = "kafka-1:9092, kafka-2:9093"
extra = { "socket.timeout.ms" = 10000, "ssl.keystore.password" = "hunter2" }

[mysql]
port = 3307
password = "toml-pass"

[elasticsearch]
hosts = ["https://es-1:9200", "http://es-2"]
request_timeout_s = 10

[pipeline]
retry_jitter = 0.5
""",
    )
    env = {
        "SEARCHSYNC_KAFKA_GROUP_ID": "from-env",
        "SEARCHSYNC_MYSQL_PASSWORD": "env-pass",
        "SEARCHSYNC_PIPELINE_MAX_IN_FLIGHT_KEYS": " 64 ",
        "SEARCHSYNC_OBSERVABILITY_LOG_LEVEL": "debug",
        "SEARCHSYNC_CONFIG": "/ignored/not/a/section",
        "PATH": "/usr/bin",
    }
    settings = load_settings(env, path)
    assert settings.kafka.group_id == "from-env"
    assert settings.kafka.dlq_topic == "from-env.dlq"
    assert settings.kafka.bootstrap_servers == "kafka-1:9092,kafka-2:9093"
    assert settings.kafka.client_config() == {
        "socket.timeout.ms": 10000,
        "ssl.keystore.password": "hunter2",
        "bootstrap.servers": "kafka-1:9092,kafka-2:9093",
        "security.protocol": "plaintext",
    }
    assert settings.mysql.port == 3307
    assert settings.mysql.password.reveal() == "env-pass"
    assert settings.elasticsearch.hosts == ("https://es-1:9200", "http://es-2")
    assert settings.elasticsearch.request_timeout_s == 10.0
    assert settings.pipeline.retry_jitter == 0.5
    assert settings.pipeline.max_in_flight_keys == 64
    assert settings.observability.log_level == "DEBUG"


def test_env_lists_and_extra_json() -> None:
    settings = load_settings(
        {
            "SEARCHSYNC_KAFKA_TOPICS": "outbox.event.a, outbox.event.b",
            "SEARCHSYNC_ELASTICSEARCH_HOSTS": "http://a:9200,http://b:9200",
            "SEARCHSYNC_KAFKA_EXTRA": '{"client.id": "me", "linger.ms": 5}',
        }
    )
    assert settings.kafka.topics == ("outbox.event.a", "outbox.event.b")
    assert settings.elasticsearch.hosts == ("http://a:9200", "http://b:9200")
    assert dict(settings.kafka.extra) == {"client.id": "me", "linger.ms": 5}


def test_topic_regex_replaces_the_topic_list() -> None:
    settings = load_settings({"SEARCHSYNC_KAFKA_TOPIC_REGEX": r"^outbox\.event\..*"})
    assert settings.kafka.topics == ()
    assert settings.kafka.topic_regex == r"^outbox\.event\..*"


def test_secret_never_shows_itself() -> None:
    settings = load_settings({"SEARCHSYNC_MYSQL_PASSWORD": "s3cr3t!"})
    assert repr(settings.mysql.password) == str(settings.mysql.password) == "***"
    assert "s3cr3t!" not in repr(settings)
    assert "s3cr3t!" not in str(settings.redacted())


def test_redacted_masks_secrets_and_sensitive_librdkafka_values() -> None:
    env = {
        "SEARCHSYNC_KAFKA_EXTRA": '{"ssl.keystore.password": "p", "ssl.key.pem": "k",'
        ' "client.id": "c"}'
    }
    redacted = load_settings(env).redacted()
    assert redacted["mysql"]["password"] == "***"
    assert redacted["kafka"]["extra"] == {
        "ssl.keystore.password": "***",
        "ssl.key.pem": "***",
        "client.id": "c",
    }
    assert redacted["elasticsearch"]["hosts"] == ["http://127.0.0.1:9200"]


def test_alias() -> None:
    settings = load_settings({"SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": "prod"})
    assert settings.alias("wiki_page") == "prod_wiki_page"
    assert Settings().alias("wiki_page") == "searchsync_wiki_page"


@pytest.mark.parametrize(
    ("variable", "value", "key"),
    [
        ("SEARCHSYNC_KAFKA_BOOTSTRAP_SERVERS", "localhost", "kafka.bootstrap_servers"),
        ("SEARCHSYNC_KAFKA_BOOTSTRAP_SERVERS", "h:99999", "kafka.bootstrap_servers"),
        ("SEARCHSYNC_KAFKA_BOOTSTRAP_SERVERS", "a:1,,b:2", "kafka.bootstrap_servers"),
        ("SEARCHSYNC_KAFKA_BOOTSTRAP_SERVERS", "", "kafka.bootstrap_servers"),
        ("SEARCHSYNC_KAFKA_GROUP_ID", "has space", "kafka.group_id"),
        ("SEARCHSYNC_KAFKA_TOPICS", "", "kafka.topics"),
        ("SEARCHSYNC_KAFKA_TOPICS", "ok,bad/topic", "kafka.topics"),
        ("SEARCHSYNC_KAFKA_TOPIC_REGEX", "outbox.*", "kafka.topic_regex"),
        ("SEARCHSYNC_KAFKA_TOPIC_REGEX", "^(unclosed", "kafka.topic_regex"),
        ("SEARCHSYNC_KAFKA_DLQ_TOPIC", "outbox.event.wiki_page", "kafka.dlq_topic"),
        ("SEARCHSYNC_KAFKA_SESSION_TIMEOUT_MS", "12.5", "kafka.session_timeout_ms"),
        ("SEARCHSYNC_KAFKA_SESSION_TIMEOUT_MS", "999", "kafka.session_timeout_ms"),
        ("SEARCHSYNC_KAFKA_MAX_POLL_INTERVAL_MS", "2000", "kafka.max_poll_interval_ms"),
        ("SEARCHSYNC_KAFKA_AUTO_OFFSET_RESET", "smallest", "kafka.auto_offset_reset"),
        ("SEARCHSYNC_KAFKA_EXTRA", "not json", "kafka.extra"),
        ("SEARCHSYNC_KAFKA_EXTRA", "[1, 2]", "kafka.extra"),
        (
            "SEARCHSYNC_KAFKA_EXTRA",
            '{"enable.auto.commit": true}',
            "kafka.extra.enable.auto.commit",
        ),
        ("SEARCHSYNC_KAFKA_EXTRA", '{"Bad Key": 1}', "kafka.extra.Bad Key"),
        ("SEARCHSYNC_KAFKA_EXTRA", '{"client.id": {"x": 1}}', "kafka.extra.client.id"),
        ("SEARCHSYNC_KAFKA_BOGUS", "1", "kafka.bogus"),
        ("SEARCHSYNC_MYSQL_PORT", "0", "mysql.port"),
        ("SEARCHSYNC_MYSQL_PORT", "65536", "mysql.port"),
        ("SEARCHSYNC_MYSQL_PORT", "3306abc", "mysql.port"),
        ("SEARCHSYNC_MYSQL_PORT", "٣٣٠٦", "mysql.port"),  # Arabic-Indic digits: int() would take it
        ("SEARCHSYNC_MYSQL_HOST", "bad host", "mysql.host"),
        ("SEARCHSYNC_MYSQL_DATABASE", "db;drop", "mysql.database"),
        ("SEARCHSYNC_MYSQL_POOL_MAX", "0", "mysql.pool_max"),
        ("SEARCHSYNC_MYSQL_CONNECT_TIMEOUT_S", "nan", "mysql.connect_timeout_s"),
        ("SEARCHSYNC_MYSQL_CONNECT_TIMEOUT_S", "inf", "mysql.connect_timeout_s"),
        ("SEARCHSYNC_MYSQL_CONNECT_TIMEOUT_S", "0", "mysql.connect_timeout_s"),
        ("SEARCHSYNC_MYSQL_CONNECT_TIMEOUT_S", "-1", "mysql.connect_timeout_s"),
        ("SEARCHSYNC_ELASTICSEARCH_HOSTS", "127.0.0.1:9200", "elasticsearch.hosts"),
        ("SEARCHSYNC_ELASTICSEARCH_HOSTS", "ftp://es:21", "elasticsearch.hosts"),
        ("SEARCHSYNC_ELASTICSEARCH_HOSTS", "http://es:notaport", "elasticsearch.hosts"),
        ("SEARCHSYNC_ELASTICSEARCH_HOSTS", "http://:9200", "elasticsearch.hosts"),
        ("SEARCHSYNC_ELASTICSEARCH_HOSTS", "http://es:9200?x=1", "elasticsearch.hosts"),
        ("SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX", "Upper", "elasticsearch.index_prefix"),
        ("SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX", "_x", "elasticsearch.index_prefix"),
        ("SEARCHSYNC_ELASTICSEARCH_BULK_MAX_ACTIONS", "0", "elasticsearch.bulk_max_actions"),
        ("SEARCHSYNC_PIPELINE_RETRY_JITTER", "1.5", "pipeline.retry_jitter"),
        ("SEARCHSYNC_PIPELINE_RETRY_MAX_DELAY_S", "0.5", "pipeline.retry_max_delay_s"),
        ("SEARCHSYNC_PIPELINE_DLQ_MAX_RATIO", "0", "pipeline.dlq_max_ratio"),
        ("SEARCHSYNC_PIPELINE_DLQ_WINDOW", "-3", "pipeline.dlq_window"),
        ("SEARCHSYNC_PIPELINE_FENCE_CHECK_INTERVAL_S", "0", "pipeline.fence_check_interval_s"),
        ("SEARCHSYNC_PIPELINE_MAX_EVENT_BYTES", "1" + "0" * 30, "pipeline.max_event_bytes"),
        ("SEARCHSYNC_OBSERVABILITY_METRICS_PORT", "70000", "observability.metrics_port"),
        ("SEARCHSYNC_OBSERVABILITY_LOG_LEVEL", "LOUD", "observability.log_level"),
    ],
)
def test_hostile_env_values_name_their_key(variable: str, value: str, key: str) -> None:
    error = _error({variable: value})
    assert error.key == key
    assert error.expected
    assert key in str(error)


def test_env_key_without_a_name_is_an_error() -> None:
    assert _error({"SEARCHSYNC_KAFKA_": "x"}).key == "SEARCHSYNC_KAFKA_"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[kafka]\ngroup_idd = 'typo'\n", "kafka.group_idd"),
        ("[kafak]\ngroup_id = 'typo'\n", "kafak"),
        ("kafka = 3\n", "kafka"),
        ("[kafka]\ntopics = 'not-a-list'\n", "kafka.topics"),
        ("[kafka]\ntopics = [1, 2]\n", "kafka.topics"),
        ("[kafka]\ntopics = ['a']\ntopic_regex = '^a'\n", "kafka.topics"),
        ("[kafka]\nsession_timeout_ms = true\n", "kafka.session_timeout_ms"),
        ("[kafka]\nsession_timeout_ms = '45000'\n", "kafka.session_timeout_ms"),
        ("[kafka]\nextra = 'x'\n", "kafka.extra"),
        ("[kafka]\nextra = { nested = { a = 1 } }\n", "kafka.extra.nested"),
        ("[mysql]\nport = 3306.0\n", "mysql.port"),
        ("[mysql]\npool_min = 5\npool_max = 2\n", "mysql.pool_max"),
        ("[mysql]\nhost = ''\n", "mysql.host"),
        ("[elasticsearch]\nrequest_timeout_s = nan\n", "elasticsearch.request_timeout_s"),
        ("[elasticsearch]\nrequest_timeout_s = '30'\n", "elasticsearch.request_timeout_s"),
        ("[elasticsearch]\nhosts = []\n", "elasticsearch.hosts"),
        ("[pipeline]\nmax_queued_events = 1e3\n", "pipeline.max_queued_events"),
        ("[observability]\nlog_level = 10\n", "observability.log_level"),
    ],
)
def test_hostile_toml_values_name_their_key(tmp_path: Path, text: str, key: str) -> None:
    assert _error({}, _toml(tmp_path, text)).key == key


def test_bad_password_type_is_reported_without_echoing_it(tmp_path: Path) -> None:
    error = _error({}, _toml(tmp_path, "[mysql]\npassword = 123456789\n"))
    assert error.key == "mysql.password"
    assert "123456789" not in str(error)


def test_extra_json_error_does_not_echo_the_value() -> None:
    error = _error({"SEARCHSYNC_KAFKA_EXTRA": '{"sasl.password": "leak'})
    assert "leak" not in str(error)


def test_unreadable_or_invalid_toml_file(tmp_path: Path) -> None:
    assert _error({}, tmp_path / "missing.toml").key == "config file"
    assert _error({}, _toml(tmp_path, "[kafka\n")).expected == "valid TOML"


def test_empty_password_is_allowed() -> None:
    assert load_settings({"SEARCHSYNC_MYSQL_PASSWORD": ""}).mysql.password == Secret("")


def test_a_misspelt_variable_is_refused_naming_the_nearest_setting() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({"SEARCHSYNC_KAFAK_GROUP_ID": "g"})
    assert caught.value.key == "SEARCHSYNC_KAFAK_GROUP_ID"
    assert "SEARCHSYNC_KAFKA_GROUP_ID" in caught.value.expected


def test_the_config_path_is_the_one_searchsync_variable_that_is_not_a_setting() -> None:
    assert load_settings({"SEARCHSYNC_CONFIG": "x"}) == load_settings({})


@pytest.mark.parametrize(
    ("variable", "nearest"),
    [
        ("SEARCHSYNC_TOPICS", "did you mean SEARCHSYNC_KAFKA_TOPICS?"),
        ("SEARCHSYNC_DB_PASSWORD", "did you mean SEARCHSYNC_MYSQL_PASSWORD?"),
        ("SEARCHSYNC_DB_USER", "did you mean SEARCHSYNC_MYSQL_USER?"),
        ("SEARCHSYNC_TEST_ES_URL", ""),
        ("SEARCHSYNC_STACK_DIR", ""),
        ("SEARCHSYNC_BENCH_PYSPY", ""),
        ("SEARCHSYNC_APP_MYSQL_USER", ""),
        ("SEARCHSYNC_FAULTS_RESTARTS", ""),
    ],
)
def test_every_unknown_searchsync_variable_is_refused_naming_the_closest_setting(
    variable: str, nearest: str
) -> None:
    """The local stack's, the benchmarks' and the tests' variables have prefixes of their own
    (STACK_, APP_DB_, BENCH_, FAULTS_, TEST_): under SEARCHSYNC_ each is a misspelt setting."""
    with pytest.raises(ConfigError) as caught:
        load_settings({variable: "x"})
    assert caught.value.key == variable
    assert caught.value.expected.startswith("a known setting SEARCHSYNC_<SECTION>_<KEY>")
    assert nearest in caught.value.expected


def test_an_unknown_key_of_a_section_names_the_closest_key() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({"SEARCHSYNC_KAFKA_TOPICSS": "a"})
    assert caught.value.key == "kafka.topicss"
    assert caught.value.expected.startswith("a key of [kafka]: did you mean kafka.topics?")
