"""Canonical JSON: the encoding every projection hash depends on."""

from __future__ import annotations

import math
import unicodedata
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.errors import CanonicalizationError
from searchsync.projection.canonical import CANONICALIZATION_VERSION, canonical_json

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=20,
)


def _reversed_dicts(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reversed_dicts(v) for k, v in reversed(list(value.items()))}
    if isinstance(value, list):
        return [_reversed_dicts(v) for v in value]
    return value


def test_version_is_declared() -> None:
    assert CANONICALIZATION_VERSION == 1


def test_exact_bytes_for_a_known_value() -> None:
    value = {"b": [1, 2.5, None, True], "a": {"z": "x", "y": "é"}}
    assert canonical_json(value) == '{"a":{"y":"é","z":"x"},"b":[1,2.5,null,true]}'.encode()


@given(json_values)
def test_dict_order_does_not_matter(value: Any) -> None:
    assert canonical_json(value) == canonical_json(_reversed_dicts(value))


@given(json_values)
def test_output_is_a_fixed_point(value: Any) -> None:
    """Decoding and re-encoding canonical bytes gives the same bytes."""
    data = canonical_json(value)
    assert canonical_json(orjson.loads(data)) == data


@given(text)
def test_strings_are_nfc(value: str) -> None:
    decomposed = unicodedata.normalize("NFD", value)
    assert canonical_json({decomposed: decomposed}) == canonical_json({value: value})
    nfc = unicodedata.normalize("NFC", value)
    assert orjson.loads(canonical_json(decomposed)) == nfc


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_are_rejected(bad: float) -> None:
    with pytest.raises(CanonicalizationError):
        canonical_json({"x": [bad]})


@pytest.mark.parametrize(
    "bad",
    [
        Decimal("NaN"),
        Decimal("-Infinity"),
        {1, "mixed"},
        object(),
        2**63,
        {1: "int key"},
        "\ud800",
    ],
)
def test_values_without_a_canonical_form_are_rejected(bad: object) -> None:
    with pytest.raises(CanonicalizationError):
        canonical_json({"x": bad})


def test_keys_colliding_after_nfc_are_rejected() -> None:
    with pytest.raises(CanonicalizationError, match="collide"):
        canonical_json({"\u00e9": 1, "e\u0301": 2})


def test_negative_zero_is_zero_and_floats_stay_floats() -> None:
    assert canonical_json(-0.0) == b"0.0"
    assert canonical_json(1.0) != canonical_json(1)
