"""Alias and physical index names, decided in one place (docs/design.md, invariants 7 and 8).

Writes go through the alias ``<prefix>_<aggregate_type>``; readers query ``<alias>_live`` (filtered
on ``is_deleted: false``, invariant 15); documents live in ``<alias>_v<N>`` (N >= 1, no leading
zeros), so a rebuild can fill a new one and swap the alias atomically. A name Elasticsearch would
refuse raises `InvalidIndexName`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from searchsync.errors import InvalidIndexName

INDEX_PREFIX: Final = re.compile(r"[a-z0-9][a-z0-9_-]{0,99}")
"""`elasticsearch.index_prefix`: lower case [a-z0-9_-], 1..100 characters, no leading - or _."""

AGGREGATE_TYPE: Final = re.compile(r"[a-z][a-z0-9_]{0,62}")
"""An aggregate type as it appears in names: [a-z][a-z0-9_]*, 1..63 characters."""

IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
"""A MySQL table, column or index name as searchsync accepts it (quoted, or checked, in SQL)."""

MAX_NAME_BYTES: Final = 255
READ_ALIAS_SUFFIX: Final = "_live"
_FORBIDDEN: Final = frozenset('\\/*?"<>|,#: ')
_PHYSICAL: Final = re.compile(r"(?P<alias>.+)_v(?P<n>[1-9][0-9]{0,17})")
# Room left after an alias for the longest "_v<N>" suffix physical_name can produce.
_SUFFIX_ROOM: Final = len("_v") + 18


def check_index_name(name: str) -> str:
    """Return `name` if Elasticsearch accepts it as an index or alias name; raise otherwise."""
    problem = _problem(name)
    if problem is not None:
        raise InvalidIndexName(f"index name {name!r}: {problem}")
    return name


def alias_name(prefix: str, aggregate_type: str) -> str:
    """The alias of `aggregate_type`: ``<prefix>_<aggregate_type>``."""
    if not INDEX_PREFIX.fullmatch(prefix):
        raise InvalidIndexName(f"index prefix {prefix!r}: want {INDEX_PREFIX.pattern}")
    if not AGGREGATE_TYPE.fullmatch(aggregate_type):
        raise InvalidIndexName(f"aggregate type {aggregate_type!r}: want {AGGREGATE_TYPE.pattern}")
    return _check_alias(f"{prefix}_{aggregate_type}")


def read_alias_name(alias: str) -> str:
    """The read alias beside the write alias `alias`: ``<alias>_live``."""
    return check_index_name(f"{_check_alias(alias)}{READ_ALIAS_SUFFIX}")


def physical_name(alias: str, version: int) -> str:
    """The physical index number `version` (>= 1) behind `alias`: ``<alias>_v<version>``."""
    _check_alias(alias)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InvalidIndexName(f"index version {version!r}: want an int >= 1")
    return check_index_name(f"{alias}_v{version}")


def parse_physical_name(name: str) -> tuple[str, int] | None:
    """``(alias, N)`` for a name of the form ``<alias>_v<N>``; None for any other name."""
    match = _PHYSICAL.fullmatch(name)
    if match is None or _problem(name) is not None:
        return None
    return match["alias"], int(match["n"])


def physical_version(alias: str, name: str) -> int | None:
    """N when `name` is ``<alias>_v<N>`` (this alias, not a longer one); None otherwise."""
    parsed = parse_physical_name(name)
    return parsed[1] if parsed is not None and parsed[0] == alias else None


def next_physical_name(alias: str, existing: Iterable[str]) -> str:
    """The physical index after every ``<alias>_v<N>`` in `existing` (names of other shapes,
    and other aliases' indices, are ignored): ``<alias>_v1`` when there is none."""
    versions = [v for v in (physical_version(alias, name) for name in existing) if v is not None]
    return physical_name(alias, max(versions, default=0) + 1)


def _check_alias(alias: str) -> str:
    check_index_name(alias)
    if len(alias.encode()) > MAX_NAME_BYTES - _SUFFIX_ROOM:
        raise InvalidIndexName(f"alias {alias!r}: too long to leave room for a _v<N> suffix")
    return alias


def _problem(name: str) -> str | None:
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    if name != name.lower():
        return "must be lower case"
    if bad := sorted(_FORBIDDEN & set(name)):
        return f"must not contain {''.join(bad)!r}"
    if name[0] in "-_+.":
        return "must not start with '-', '_', '+' or '.'"
    if len(name.encode()) > MAX_NAME_BYTES:
        return f"longer than {MAX_NAME_BYTES} bytes"
    return None
