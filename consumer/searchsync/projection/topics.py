"""The topics the consumer reads, from the registered aggregate types.

Without ``[kafka] topics`` or ``topic_regex`` the consumer reads one topic per type whose events
it takes (each registered type, and each type a lookup references for the fan-out): ``[relay]
topic_template`` with the type in it (where the connector and the relay route the type's
events). An explicit list must cover each of them and name no other topic (`topic_problems`);
``searchsync config check`` refuses one that does not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from searchsync.config import Settings
from searchsync.projection.plugins import registry_from_settings
from searchsync.projection.references import event_types


def follows_types(settings: Settings) -> bool:
    return not settings.kafka.topics and settings.kafka.topic_regex is None


def consumed_topics(settings: Settings, types: Sequence[str] | None = None) -> tuple[str, ...]:
    """The topics the consumer reads (empty with a ``topic_regex``): the explicit list, or one
    per type whose events it takes (`types`; default: the `event_types` of the registry of
    ``[projection] modules``: the registered types and those a lookup references)."""
    if not follows_types(settings):
        return settings.kafka.topics
    if types is None:
        types = event_types(registry_from_settings(settings.projection))
    return tuple(dict.fromkeys(settings.relay.topic_template.replace("{type}", t) for t in types))


def subscription(settings: Settings, types: Sequence[str] | None = None) -> list[str]:
    """What the consumer passes to ``subscribe``: the regex, or `consumed_topics`."""
    if settings.kafka.topic_regex is not None:
        return [settings.kafka.topic_regex]
    return list(consumed_topics(settings, types))


def topic_problems(settings: Settings, types: Sequence[str]) -> list[str]:
    """What is wrong with the configured topics for the event `types` (the registered ones and
    those a lookup references), each one line that names the fix; empty when they follow the
    types."""
    if follows_types(settings):
        return []
    template = settings.relay.topic_template
    wanted = {template.replace("{type}", t): t for t in types}
    kafka = settings.kafka
    if kafka.topic_regex is not None:
        return [
            f"kafka.topic_regex {kafka.topic_regex!r} does not match {topic} (the topic of the"
            f" type {wanted[topic]!r}, relay.topic_template): widen the regex, or"
            " unset it to read one topic per registered type"
            for topic in wanted
            if re.match(kafka.topic_regex, topic) is None
        ]
    return [
        f"kafka.topics misses {topic}, the topic of the type {wanted[topic]!r}"
        " (relay.topic_template): add it, or unset kafka.topics to read one topic per"
        " registered type"
        for topic in wanted
        if topic not in kafka.topics
    ] + [
        f"kafka.topics names {topic}, which no registered or referenced type writes"
        f" (relay.topic_template {template!r}): remove it, or register its type in"
        " projection.modules"
        for topic in kafka.topics
        if topic not in wanted
    ]
