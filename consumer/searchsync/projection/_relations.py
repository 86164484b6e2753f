"""Children and lookups: the rows of other tables a projector's document is built from.

A `Child` is one-to-many (an article's tags), a `Lookup` many-to-one (its author; or, `through` a
child, each child row's). The truth port reads each with one ``IN (...)`` query per batch and
`attach_steps` puts them on the rows under their ``name``, in an order independent of the
database's, so the same truth gives the same bytes (invariant 6).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from searchsync.naming import AGGREGATE_TYPE, IDENTIFIER

Row = Mapping[str, Any]
"""One row as aiomysql's DictCursor returns it (JSON columns as `str`, DATETIME as `datetime`)."""


@dataclass(frozen=True, slots=True)
class Child:
    """One-to-many rows of another table that belong to the aggregate (an article's tags).

    ``row[name]`` is a list of rows with `columns`, sorted by `order_by`, then all `columns`.
    `key` holds the root's id (an index must start with it). A child row's change must bump the
    root's revision and append the root's outbox event.
    """

    name: str
    table: str
    key: str
    columns: tuple[str, ...]
    order_by: tuple[str, ...]

    def __post_init__(self) -> None:
        check_identifiers(self, "name", "table", "key")
        check_columns(self.columns, "columns", self.name)
        check_columns(self.order_by, "order_by", self.name, empty=True)
        if self.key not in self.columns:
            raise ValueError(f"child {self.name!r}: columns must include its key {self.key!r}")
        if stray := [c for c in self.order_by if c not in self.columns]:
            raise ValueError(f"child {self.name!r}: order_by {stray} are not among its columns")


@dataclass(frozen=True, slots=True)
class Lookup:
    """A many-to-one row another table holds (an article's author).

    ``row[name]`` is the row whose ``id`` is the root's `via` column, or None. With `through` (a
    child's name) `via` is that child's column and each child row gets its own:
    ``row[through][i][name]``. `aggregate_type` names a looked-up aggregate with outbox events of
    its own, whose changes fan out to the dependents (an index ``(via, id)`` or ``(via, key)``).
    """

    name: str
    table: str
    via: str
    columns: tuple[str, ...]
    aggregate_type: str | None = None
    through: str | None = None

    def __post_init__(self) -> None:
        check_identifiers(self, "name", "table", "via")
        if self.through is not None:
            check_identifiers(self, "through")
        check_columns(self.columns, "columns", self.name)
        if "id" not in self.columns:
            raise ValueError(f"lookup {self.name!r}: columns must include 'id'")
        kind = self.aggregate_type
        if kind is not None and not AGGREGATE_TYPE.fullmatch(str(kind)):
            want = "want [a-z][a-z0-9_]* or None"
            raise ValueError(f"lookup {self.name!r}: aggregate_type {kind!r}: {want}")


def check_relations(
    columns: tuple[str, ...], children: tuple[Child, ...], lookups: tuple[Lookup, ...]
) -> None:
    """Raise `ValueError` unless the declarations fit a root read with `columns`: unique names
    that are no columns, and every `via` a column of the root (or of the child `through`)."""
    for what, declared, kind in (("children", children, Child), ("lookups", lookups, Lookup)):
        if not isinstance(declared, tuple) or not all(isinstance(d, kind) for d in declared):
            raise ValueError(f"{what} must be a tuple of {kind.__name__}")
    names = [c.name for c in children] + [lk.name for lk in lookups]
    if len(set(names)) != len(names):
        raise ValueError(f"children and lookups {names} name a relation twice")
    if clash := sorted(set(names).intersection(columns)):
        raise ValueError(f"children or lookups {clash} are named like columns of the root")
    by_name = {c.name: c for c in children}
    for lookup in lookups:
        child, name, via = by_name.get(lookup.through or ""), repr(lookup.name), repr(lookup.via)
        if lookup.through is None:
            if lookup.via not in columns:
                raise ValueError(f"lookup {name}: via {via} is not one of the root's columns")
        elif child is None:
            raise ValueError(f"lookup {name}: through {lookup.through!r} is no child")
        elif lookup.via not in child.columns:
            raise ValueError(
                f"lookup {name}: via {via} is not one of the columns of child {child.name!r}"
            )
        elif lookup.name in child.columns:
            raise ValueError(f"lookup {name} is named like a column of child {child.name!r}")


def through_child(lookup: Lookup, children: Iterable[Child]) -> Child | None:
    """The child `lookup` reads through (None for a lookup through a root column)."""
    return next((c for c in children if c.name == lookup.through), None)


def lookup_keys(
    lookup: Lookup, roots: Iterable[Row], children: Sequence[tuple[Child, Sequence[Row]]]
) -> list[Any]:
    """The distinct non-null `via` values of the roots (or of the child rows `through`), in
    first-seen order: the ids of one ``IN (...)`` read of the lookup table."""
    through = [r for c, found in children if c.name == lookup.through for r in found]
    rows = roots if lookup.through is None else through
    return list(dict.fromkeys(r[lookup.via] for r in rows if r.get(lookup.via) is not None))


def child_order(child: Child, rows: Iterable[Row]) -> list[Row]:
    """`rows` sorted by ``child.order_by``, then every column (a total order), NULL first."""
    return _ordered(rows, _sort_keys(child))


def _sort_keys(child: Child) -> tuple[str, ...]:
    return child.order_by + tuple(c for c in child.columns if c not in child.order_by)


def _ordered(rows: Iterable[Row], keys: tuple[str, ...]) -> list[Row]:
    """A new list of `rows` sorted by the values of `keys`, NULL first."""
    listed = rows if isinstance(rows, list) else list(rows)
    if len(listed) < 2:
        return listed[:]
    try:
        # The rows' own values, compared in C. Where this sort completes, every comparison it
        # made gave what the NULL-first keys below give (a NULL only ever met a NULL); a NULL
        # meeting a value raises TypeError instead, and a missing column KeyError.
        return sorted(listed, key=itemgetter(*keys))
    except (TypeError, KeyError):
        return sorted(
            listed,
            key=lambda row: tuple((0, 0) if v is None else (1, v) for v in map(row.get, keys)),
        )


def attach_steps(
    roots: Sequence[dict[str, Any]],
    children: Sequence[tuple[Child, Iterable[Row]]],
    lookups: Sequence[tuple[Lookup, Iterable[Row]]],
    *,
    step: int = 256,
    key: str = "id",
) -> Iterator[None]:
    """Put on every root row (in place) its children (in `child_order`) and lookups (or None), and
    on each (copied) child row its lookups `through` it; yields after grouping and after each
    `step` roots, so a caller on an event loop can give the loop a turn. Done when exhausted.
    `key` is the roots' id column (a child's key column holds its value)."""
    indexed = [(lk, {str(r["id"]): r for r in rows}) for lk, rows in lookups]
    grouped: list[tuple[Child, defaultdict[str, list[Row]], tuple[str, ...]]] = []
    for child, rows in children:
        through = [(lk, by_id) for lk, by_id in indexed if lk.through == child.name]
        if through:
            rows = [_looked_up(dict(row), through) for row in rows]
        by_root: defaultdict[str, list[Row]] = defaultdict(list)
        child_key = child.key
        for row in rows:
            value = row[child_key]
            by_root[value if value.__class__ is str else str(value)].append(row)
        grouped.append((child, by_root, _sort_keys(child)))
    on_root = [(lk, by_id) for lk, by_id in indexed if lk.through is None]
    yield
    for start in range(0, len(roots), step):
        for root in roots[start : start + step]:
            root_id = root[key]
            root_id = root_id if root_id.__class__ is str else str(root_id)
            for child, by_root, keys in grouped:
                root[child.name] = _ordered(by_root.get(root_id, []), keys)
            _looked_up(root, on_root)
        yield


def _looked_up(
    row: dict[str, Any], lookups: Sequence[tuple[Lookup, dict[str, Row]]]
) -> dict[str, Any]:
    """`row` with each lookup's row (by its via column) or None put on it, in place."""
    for lookup, by_id in lookups:
        via = row.get(lookup.via)
        row[lookup.name] = None if via is None else by_id.get(str(via))
    return row


def check_identifiers(declared: object, *fields: str) -> None:
    for field in fields:
        value = getattr(declared, field)
        if not isinstance(value, str) or not IDENTIFIER.fullmatch(value):
            kind = type(declared).__name__
            raise ValueError(f"{kind} {field} {value!r}: want an identifier [A-Za-z_][A-Za-z0-9_]*")


def check_columns(columns: object, what: str, name: str, *, empty: bool = False) -> None:
    if not isinstance(columns, tuple) or not (columns or empty):
        raise ValueError(f"{name!r}: {what} must be a non-empty tuple of column names")
    if bad := [c for c in columns if not isinstance(c, str) or not IDENTIFIER.fullmatch(c)]:
        raise ValueError(f"{name!r}: {what} {bad!r}: want identifiers [A-Za-z_][A-Za-z0-9_]*")
    if len(set(columns)) != len(columns):
        raise ValueError(f"{name!r}: {what} {columns!r} name a column twice")
