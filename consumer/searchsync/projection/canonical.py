"""Canonical JSON: the one byte encoding documents and their hashes are computed from (invariant 6).

1. Object keys must be `str`, NFC-normalized, sorted by code point; keys equal after NFC are an
   error. 2. Strings are NFC; lone surrogates are an error. 3. Lists and tuples keep their order.
4. `int` within signed 64 bits; `float` finite, ``-0.0`` as ``0.0``, ``1.0`` stays a float.
5. `None`, `bool`; the values of database columns (Decimals, dates and times, sets, bytes) as
   `searchsync.projection.column_forms` writes them; anything else is rejected.
6. UTF-8, no insignificant whitespace, no trailing newline.

Changing any rule changes hashes: bump `CANONICALIZATION_VERSION`. (The column forms gave a form
to values that had none, so no hash of version 1 changed.)
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping
from typing import Any

import orjson

from searchsync.errors import CanonicalizationError
from searchsync.projection.column_forms import column_form

CANONICALIZATION_VERSION = 1
"""Version of the rules above. Part of the contract of every stored `projection_hash`."""

_nfc = unicodedata.normalize
_INT_MIN = -(2**63)
_INT_MAX = 2**63 - 1


def canonical_json(obj: Any) -> bytes:
    """Encode `obj` under the canonical rules; raise `CanonicalizationError` if it cannot be."""
    return encode_normalized(normalize(obj))


def normalize(obj: Any) -> Any:
    """`obj` under the canonical rules, as plain dicts, lists and scalars (not yet encoded)."""
    try:
        return _fast(obj)
    except CanonicalizationError:
        return _normalize(obj, "$")  # again, slowly, to say where the offending value is


def encode_normalized(normalized: Any) -> bytes:
    """The canonical bytes of a value `normalize` returned."""
    try:
        return orjson.dumps(normalized, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError as exc:  # e.g. a lone surrogate in a string
        raise CanonicalizationError(str(exc)) from exc


def _fast(value: Any) -> Any:
    """`_normalize`'s hot path: the same rules, common leaves handled inline."""
    kind = type(value)
    if kind is str:
        return value if value.isascii() else _nfc("NFC", value)
    if value is None or kind is bool:
        return value
    if kind is int:
        if not _INT_MIN <= value <= _INT_MAX:
            raise CanonicalizationError("integer outside signed 64 bits")
        return value
    if kind is dict:
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                raise CanonicalizationError("object key is not a string")
            nkey = key if key.isascii() else _nfc("NFC", key)
            if nkey in out:
                raise CanonicalizationError("keys collide after NFC")
            t = type(item)
            if t is str:
                out[nkey] = item if item.isascii() else _nfc("NFC", item)
            elif item is None or t is bool or (t is int and _INT_MIN <= item <= _INT_MAX):
                out[nkey] = item
            else:
                out[nkey] = _fast(item)
        return out
    if kind is list or kind is tuple:
        return [
            (item if item.isascii() else _nfc("NFC", item)) if type(item) is str else _fast(item)
            for item in value
        ]
    return _normalize(value, "$")  # subclasses, floats, other mappings: the general rules


def _normalize(value: Any, path: str) -> Any:
    # bool before int: bool is a subclass of int and is written as true/false.
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise CanonicalizationError(f"{path}: integer outside signed 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalizationError(f"{path}: non-finite float {value!r}")
        return 0.0 if value == 0.0 else value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalizationError(f"{path}: object key {key!r} is not a string")
            nkey = unicodedata.normalize("NFC", key)
            if nkey in out:
                raise CanonicalizationError(f"{path}: keys collide after NFC: {key!r}")
            out[nkey] = _normalize(item, f"{path}.{nkey}")
        return out
    if isinstance(value, list | tuple):
        return [_normalize(item, f"{path}[{i}]") for i, item in enumerate(value)]
    form = column_form(value, path)
    return _normalize(form, path) if isinstance(form, list) else form
