"""The part of a table an initial load reads (`searchsync index load`): a key range
``low < key <= high`` (either end open) and an operator's ``--where`` condition. `scope_sql` turns
one into SQL conditions and parameters for the truth's keyset scan and count; `split_keys` cuts a
table into N key ranges of about equal row counts.

Why key ranges and not a hash of the key modulo N: each part's keyset scan then reads only its own
stretch of the primary key, so N processes read the table once between them, where a hash filter
makes every process walk the whole table. Integer and string keys alike are compared by the
database (its collation for strings), exactly as the keyset scan orders them.

The ``--where`` text is SQL written by the operator, pasted into the query: `check_where` refuses
what could reach beyond one condition (``;``, comments, unbalanced parentheses or quotes) and it is
always wrapped in parentheses, but it is not a sandbox: the consumer's MySQL user, which reads the
business tables with SELECT only (docs/security.md), is what bounds it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Final

from searchsync.errors import InvalidRequest

MAX_WHERE: Final = 4_000


@dataclass(frozen=True, slots=True)
class KeyScope:
    """Rows with ``low < key <= high`` (None: no bound) that satisfy `where` (None: all)."""

    low: str | None = None
    high: str | None = None
    where: str | None = None


def check_where(text: str) -> str:
    """`text` stripped, when it is one SQL condition: not empty, at most `MAX_WHERE` characters,
    no ``;``, no comment (``--``, ``#``, ``/*``), quotes closed and parentheses balanced outside
    them. `InvalidRequest` naming the problem otherwise."""
    where = text.strip()
    if not where:
        raise InvalidRequest("--where is empty: give an SQL condition, e.g. \"id LIKE 'a%'\"")
    if len(where) > MAX_WHERE:
        raise InvalidRequest(f"--where is longer than {MAX_WHERE} characters")
    depth, quote, i = 0, "", 0
    while i < len(where):
        c = where[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"`":
            quote = c
        elif c == ";":
            raise InvalidRequest("--where must be one SQL condition: ';' is refused")
        elif c == "#" or where.startswith(("--", "/*"), i):
            raise InvalidRequest("--where must not contain an SQL comment (--, #, /*)")
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                raise InvalidRequest("--where has a ')' without its '('")
        i += 1
    if quote:
        raise InvalidRequest(f"--where has an unclosed {quote} quote")
    if depth:
        raise InvalidRequest("--where has a '(' without its ')'")
    return where


def scope_sql(
    scope: KeyScope | None, key: str, param: Callable[[str], Any] = str
) -> tuple[list[str], list[Any]]:
    """The conditions (ANDed by the caller) and their parameters for `scope` on the quoted key
    column `key`, each bound as `param` makes it (an integer key's bounds as ints). A ``%`` of
    the where text is doubled: the driver formats the query with ``%``."""
    if scope is None:
        return [], []
    bounds = [(f"{key} > %s", scope.low), (f"{key} <= %s", scope.high)]
    conditions = [sql for sql, value in bounds if value is not None]
    args = [param(value) for _, value in bounds if value is not None]
    if scope.where is not None:
        conditions.append(f"({scope.where.replace('%', '%%')})")
    return conditions, args


def where_clause(conditions: Sequence[str]) -> str:
    """`` WHERE a AND b`` (empty without conditions)."""
    return f" WHERE {' AND '.join(conditions)}" if conditions else ""


def ranges(boundaries: Sequence[str]) -> list[KeyScope]:
    """The ``len(boundaries) + 1`` key ranges cut at `boundaries` (sorted by the database):
    ``(-inf, b1], (b1, b2], ..., (bN-1, +inf)``: disjoint, and every key is in one of them."""
    return [KeyScope(low, high) for low, high in pairwise([None, *boundaries, None])]
