"""How commands print: data on stdout (one JSON document with ``--json``), messages on stderr;
and one line for a service that could not be reached: where it was looked for (``*_at``) and
which setting says so, so the operator knows what to check."""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterable
from typing import Any, Final

import orjson
from confluent_kafka import KafkaError, KafkaException
from elastic_transport import ConnectionError as EsConnectionError
from elastic_transport import ConnectionTimeout as EsConnectionTimeout

from searchsync.config import Settings
from searchsync.errors import ErrorCode, TransientError
from searchsync.exit_codes import ExitCode

PLAN_ONLY: Final = "plan only, nothing changed: add --execute to act"  # stderr, no --execute


def out(*lines: str) -> None:
    print(*lines, sep="\n", end="\n" if lines else "", file=sys.stdout, flush=True)


def err(*lines: str) -> None:
    print(*lines, sep="\n", end="\n" if lines else "", file=sys.stderr, flush=True)


def show(
    as_json: bool,
    document: Any,
    lines: Iterable[str],
    *,
    plan: bool = False,
    code: ExitCode = ExitCode.OK,
) -> ExitCode:
    """With ``--json`` print `document`, otherwise each of `lines` (a generator runs only then)
    and, for a `plan`, `PLAN_ONLY` on stderr; `code` is the command's exit code."""
    if as_json:
        print_json(document)
        return code
    out(*lines)
    if plan:
        err(PLAN_ONLY)
    return code


def print_json(document: Any) -> None:
    out(orjson.dumps(document, default=_json_default, option=orjson.OPT_INDENT_2).decode())


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):  # UTF-8 text as a string; anything else as {"base64": ...}
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, set | frozenset):
        return sorted(value)
    return str(value)


# librdkafka's codes for "no broker answered" (not a refusal by a broker that did answer)
_KAFKA_AWAY: Final = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._TIMED_OUT,
        KafkaError._RESOLVE,
    }
)


def describe_unreachable(exc: BaseException, settings: Settings) -> str | None:
    """A message naming the address and the setting when `exc`, or an exception it was raised
    from, says Kafka, MySQL or Elasticsearch could not be reached; None for any other error."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        error = cause.args[0] if isinstance(cause, KafkaException) and cause.args else None
        if isinstance(error, KafkaError) and error.code() in _KAFKA_AWAY:
            return f"{kafka_at(settings)} is unreachable: {error.str()}"
        if isinstance(cause, TransientError) and cause.code is ErrorCode.MYSQL_UNAVAILABLE:
            return f"{mysql_at(settings)} is unreachable: {cause}"
        if isinstance(cause, EsConnectionError | EsConnectionTimeout) or (
            isinstance(cause, TransientError) and cause.code is ErrorCode.ES_UNAVAILABLE
        ):
            return f"{elasticsearch_at(settings)} is unreachable: {cause}"
        cause = cause.__cause__ or cause.__context__
    return None


def kafka_at(settings: Settings) -> str:
    return f"Kafka at {settings.kafka.bootstrap_servers} (setting kafka.bootstrap_servers)"


def mysql_at(settings: Settings) -> str:
    m = settings.mysql
    return f"MySQL at {m.host}:{m.port} (settings mysql.host, mysql.port)"


def elasticsearch_at(settings: Settings) -> str:
    hosts = ", ".join(settings.elasticsearch.hosts)
    engine = "OpenSearch" if settings.search.engine == "opensearch" else "Elasticsearch"
    return f"{engine} at {hosts} (setting elasticsearch.hosts)"
