"""How commands print: data on stdout (one JSON document with ``--json``), messages on stderr."""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterable
from typing import Any, Final

import orjson

PLAN_ONLY: Final = "plan only, nothing changed: add --execute to act"  # stderr, no --execute


def out(text: str) -> None:
    print(text, file=sys.stdout, flush=True)


def err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def show(as_json: bool, document: Any, lines: Iterable[str], *, plan: bool = False) -> None:
    """With ``--json`` print `document`, otherwise each of `lines` (a generator runs only then)
    and, for a `plan`, `PLAN_ONLY` on stderr."""
    if as_json:
        print_json(document)
        return
    for line in lines:
        out(line)
    if plan:
        err(PLAN_ONLY)


def print_json(document: Any) -> None:
    out(orjson.dumps(document, default=_json_default, option=orjson.OPT_INDENT_2).decode())


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return bytes_json(value)
    if isinstance(value, set | frozenset):
        return sorted(value)
    return str(value)


def bytes_json(value: bytes | None) -> Any:
    """UTF-8 text as a string; anything else as ``{"base64": ...}``."""
    if value is None:
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode("ascii")}
