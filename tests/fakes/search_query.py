"""The few Elasticsearch queries the search fake's `InMemoryIndex.search` understands, on one
document.

``match_all``, ``ids``, ``term`` and ``terms`` (exact values), ``match`` (every word of the
text appears among the field's lower-cased words) and ``bool`` (``must``/``filter`` all hold,
``must_not`` none, ``should`` one when it is the only clause). Anything else raises
`ValueError`: a test that needs more must say so rather than get a wrong answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["matches"]


def matches(query: Mapping[str, Any], doc_id: str, source: Mapping[str, Any]) -> bool:
    """Whether the document `doc_id` with `source` matches `query`."""
    [(kind, spec)] = query.items()
    if kind == "match_all":
        return True
    if kind == "ids":
        return doc_id in spec["values"]
    if kind == "bool":
        return _bool(spec, doc_id, source)
    [(field, value)] = spec.items()
    stored = doc_id if field == "_id" else source.get(field)
    if kind == "term":
        return _has(stored, value["value"] if isinstance(value, Mapping) else value)
    if kind == "terms":
        return any(_has(stored, v) for v in value)
    if kind == "match":
        text = value["query"] if isinstance(value, Mapping) else value
        words = set(str(stored).lower().split()) if stored is not None else set()
        return all(word in words for word in str(text).lower().split())
    raise ValueError(f"the in-memory index does not understand the query {kind!r}")


def _bool(spec: Mapping[str, Any], doc_id: str, source: Mapping[str, Any]) -> bool:
    def clauses(key: str) -> list[Mapping[str, Any]]:
        found = spec.get(key, [])
        return [found] if isinstance(found, Mapping) else list(found)

    required = clauses("must") + clauses("filter")
    should = clauses("should")
    return (
        all(matches(q, doc_id, source) for q in required)
        and not any(matches(q, doc_id, source) for q in clauses("must_not"))
        and (not should or bool(required) or any(matches(q, doc_id, source) for q in should))
    )


def _has(stored: Any, value: Any) -> bool:
    if isinstance(stored, list):
        return value in stored
    return bool(stored == value)
