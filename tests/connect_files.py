"""The repository's ``connect/`` files and how they are rendered: the connector configurations
are `outbox_connector_config` with placeholders for the hosts, names and the secrets file;
``deploy/local/connect.sh`` fills them in the same way `fill` does."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any, Final

from searchsync.kafka.outbox_connector import ConnectorTarget, Credentials, outbox_connector_config
from searchsync.mysql.dialect import Flavor

CONNECT_DIR: Final = Path(__file__).resolve().parents[1] / "connect"
PLACEHOLDER: Final = re.compile(r"\$\{([A-Z][A-Z0-9_]*)\}")

TEMPLATE_TARGET: Final = ConnectorTarget(
    mysql_host="${MYSQL_HOST}",
    mysql_port="${MYSQL_PORT}",
    database="${MYSQL_DATABASE}",
    server_id="${DEBEZIUM_SERVER_ID}",
    topic_prefix="${DEBEZIUM_TOPIC_PREFIX}",
    schema_history_topic="${DEBEZIUM_SCHEMA_HISTORY_TOPIC}",
    kafka_bootstrap="${KAFKA_BOOTSTRAP}",
)
TEMPLATE_CREDENTIALS: Final = Credentials("file", "${DEBEZIUM_SECRETS_FILE}")


def connector_template(flavor: Flavor) -> dict[str, Any]:
    """What ``connect/outbox-<flavor>.json`` holds: Connect's REST form, placeholders in it."""
    target = dataclasses.replace(TEMPLATE_TARGET, flavor=flavor)
    config = outbox_connector_config(target, TEMPLATE_CREDENTIALS)
    return {"name": "${CONNECTOR_NAME}", "config": config}


def connector_file(flavor: Flavor) -> Path:
    return CONNECT_DIR / f"outbox-{flavor}.json"


def render(template: dict[str, Any]) -> str:
    """The file's text: two-space JSON, keys in the configuration's order, a final newline."""
    return json.dumps(template, indent=2, ensure_ascii=False) + "\n"


def fill(text: str, values: dict[str, str]) -> str:
    """`text` with each ``${NAME}`` of `values` replaced (JSON-escaped); others stay."""
    return PLACEHOLDER.sub(
        lambda m: json.dumps(values[m[1]])[1:-1] if m[1] in values else m[0], text
    )
