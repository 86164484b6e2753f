"""The Kafka security of Debezium's schema history clients, as ``[kafka]`` sets searchsync's own.
``[kafka]`` speaks librdkafka (PEM files, ``sasl.username``/``sasl.password``); the connector's
producer and consumer are Java clients: ``security.protocol`` upper-case, SASL through
``sasl.jaas.config``, the CA as a PEM trust store, a client certificate and key as PEM contents
read by Kafka's ``DirectoryConfigProvider`` (``dir``). No secret is written out: the SASL password
and the key's password are placeholders the worker's config provider resolves."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from searchsync.config import KafkaSettings

_LOGIN_MODULES: Final = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


@dataclass(frozen=True, slots=True)
class HistoryKafka:
    """What the schema history clients need of ``[kafka]``: its protocol, SASL user and TLS files
    (paths as the Connect workers see them), and whether passwords are set; never the passwords."""

    security_protocol: str = "plaintext"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    ssl_ca_location: str | None = None
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    ssl_key_password: bool = False

    @classmethod
    def of(cls, kafka: KafkaSettings) -> HistoryKafka:
        return cls(
            security_protocol=kafka.security_protocol,
            sasl_mechanism=kafka.sasl_mechanism,
            sasl_username=kafka.sasl_username,
            ssl_ca_location=kafka.ssl_ca_location,
            ssl_certificate_location=kafka.ssl_certificate_location,
            ssl_key_location=kafka.ssl_key_location,
            ssl_key_password=kafka.ssl_key_password is not None,
        )

    @property
    def client_certificate(self) -> bool:
        """A client certificate is set: the worker needs the ``dir`` config provider."""
        return self.ssl_certificate_location is not None


def history_client_settings(kafka: HistoryKafka, secret: Callable[[Any], str]) -> dict[str, str]:
    """The Java client settings (without the ``schema.history.internal.producer.`` or
    ``consumer.`` prefix); `secret` turns ``kafka_password``/``kafka_key_password`` into the
    provider placeholder. ValueError for a SASL user name a JAAS string cannot quote."""
    out = {"security.protocol": kafka.security_protocol.upper()}
    if kafka.sasl_mechanism is not None:
        user = kafka.sasl_username or ""
        if '"' in user or "\\" in user:
            raise ValueError(f"kafka.sasl_username {user!r}: no quotes or backslashes in a JAAS")
        out["sasl.mechanism"] = kafka.sasl_mechanism
        out["sasl.jaas.config"] = (
            f'{_LOGIN_MODULES[kafka.sasl_mechanism]} required username="{user}"'
            f' password="{secret("kafka_password")}";'
        )
    if kafka.ssl_ca_location is not None:
        out["ssl.truststore.type"] = "PEM"
        out["ssl.truststore.location"] = kafka.ssl_ca_location
    if kafka.ssl_certificate_location is not None and kafka.ssl_key_location is not None:
        out["ssl.keystore.type"] = "PEM"
        out["ssl.keystore.certificate.chain"] = _file(kafka.ssl_certificate_location)
        out["ssl.keystore.key"] = _file(kafka.ssl_key_location)
        if kafka.ssl_key_password:
            out["ssl.key.password"] = secret("kafka_key_password")
    return out


def _file(path: str) -> str:
    """The ``dir`` provider's placeholder for the contents of the file at `path`."""
    folder, name = posixpath.split(path)
    return f"${{dir:{folder or '.'}:{name}}}"
