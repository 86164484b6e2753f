"""Reading one settings section: typed getters that raise `ConfigError` with the dotted key
(``kafka.group_id``), the expected form and what was given."""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit

from searchsync.config._secrets import MASK, SENSITIVE_KEY, Secret, scrub_credentials
from searchsync.duration import format_duration
from searchsync.errors import ConfigError

LibrdkafkaValue = str | int | float | bool

ENV_PREFIX: Final = "SEARCHSYNC_"
_TOPIC = re.compile(r"(?!\.\.?\Z)[A-Za-z0-9._-]{1,249}")  # '.' and '..' are no topic names
_HOST = re.compile(r"[A-Za-z0-9._-]{1,253}|[0-9A-Fa-f:.]{2,45}")  # name, IPv4 or bare IPv6
_BOOLEANS: Final = {"true": True, "false": False, "1": True, "0": False}
_INTEGER = re.compile(r"[+-]?[0-9]{1,20}")


def _plain(value: object) -> object:
    """A setting's value for printing: secrets masked, URLs without their passwords."""
    if isinstance(value, Secret):
        return MASK
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return scrub_credentials(value)
    if isinstance(value, Mapping):
        return {k: MASK if SENSITIVE_KEY.search(str(k)) else _plain(v) for k, v in value.items()}
    return value


def did_you_mean(word: str, known: Iterable[str], prefix: str = "") -> str:
    """``: did you mean <prefix><nearest>?``, or "" when no known word is near `word`."""
    nearest = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f": did you mean {prefix}{nearest[0]}?" if nearest else ""


class _Section:
    """Reads one section's raw values (TOML typed, env as strings); defaults from its dataclass."""

    def __init__(
        self, name: str, cls: type, toml: Mapping[str, object], env: Mapping[str, str]
    ) -> None:
        self.name = name
        default = cls()
        self._defaults = {f.name: getattr(default, f.name) for f in dataclasses.fields(cls)}
        for key in (*toml, *env):
            if key not in self._defaults:
                shown = f"{ENV_PREFIX}{name.upper()}_{key.upper()}" if key in env else key
                mean = did_you_mean(key, self._defaults, f"{name}.")
                raise ConfigError(
                    f"{name}.{key}",
                    f"a key of [{name}]{mean} (keys: {', '.join(sorted(self._defaults))})",
                    shown,
                )
        self._toml = toml
        self._env = env

    def key(self, key: str) -> str:
        return f"{self.name}.{key}"

    def given(self, key: str) -> bool:
        return key in self._env or key in self._toml

    def _raw(self, key: str) -> tuple[object, bool]:
        """The value for `key` and whether it is an environment string that needs parsing."""
        if key in self._env:
            return self._env[key], True
        if key in self._toml:
            return self._toml[key], False
        return self._defaults[key], False

    def string(self, key: str, pattern: re.Pattern[str] | None = None, form: str = "") -> str:
        value, _ = self._raw(key)
        expected = form or "a non-empty string"
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(self.key(key), expected, value)
        value = value.strip()
        if pattern is not None and not pattern.fullmatch(value):
            raise ConfigError(self.key(key), expected, scrub_credentials(value))
        return value

    def optional_string(self, key: str) -> str | None:
        return None if self._raw(key)[0] is None else self.string(key)

    def choice(
        self, key: str, choices: tuple[str, ...], *, upper: bool = False, lower: bool = False
    ) -> str:
        value, _ = self._raw(key)
        normal = value
        if isinstance(value, str) and (upper or lower):
            normal = value.strip().upper() if upper else value.strip().lower()
        if not isinstance(normal, str) or normal.strip() not in choices:
            raise ConfigError(self.key(key), f"one of {', '.join(choices)}", value)
        return normal.strip()

    def integer(self, key: str, lo: int, hi: int) -> int:
        value, from_env = self._raw(key)
        expected = f"an integer in {lo}..{hi}"
        if from_env and isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
            value = int(value.strip())
        if type(value) is not int or not lo <= value <= hi:
            raise ConfigError(self.key(key), expected, value)
        return value

    def number(self, key: str, lo: float, hi: float, *, lo_open: bool = False) -> float:
        """A finite float in the range (an int is fine too, a bool is not)."""
        value, from_env = self._raw(key)
        expected = f"a number in {'(' if lo_open else '['}{lo}, {hi}]"
        if from_env and isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise ConfigError(self.key(key), expected, value) from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(self.key(key), expected, value)
        number = float(value)
        if not math.isfinite(number) or number > hi or number < lo or (lo_open and number == lo):
            raise ConfigError(self.key(key), expected, value)
        return number

    def string_list(
        self, key: str, check: Callable[[str], object], form: str, *, allow_empty: bool = False
    ) -> tuple[str, ...]:
        """A list in TOML, a comma-separated string in the environment."""
        value, from_env = self._raw(key)
        expected = f"a list of {form}"
        if from_env and isinstance(value, str):
            value = [item.strip() for item in value.split(",")] if value.strip() else []
        if not isinstance(value, list | tuple) or (not value and not allow_empty):
            raise ConfigError(self.key(key), expected, value)
        for item in value:
            if not isinstance(item, str) or not check(item.strip()):
                shown = scrub_credentials(item) if isinstance(item, str) else item
                raise ConfigError(self.key(key), expected, shown)
        return tuple(item.strip() for item in value)

    def secret(self, key: str) -> Secret:
        value, _ = self._raw(key)
        if isinstance(value, Secret):
            return value
        if not isinstance(value, str):
            raise ConfigError(self.key(key), "a string", MASK)  # never echo a secret
        return Secret(value)

    def optional_secret(self, key: str) -> Secret | None:
        """A secret, or None when unset; an empty string counts as unset."""
        return None if self._raw(key)[0] in (None, "") else self.secret(key)

    def topic_template(self, key: str) -> str:
        """A topic name with ``{type}`` in it, for the topic of each aggregate type."""
        template = self.string(key, form="a topic name with {type}")
        if "{type}" not in template or not _TOPIC.fullmatch(template.replace("{type}", "t")):
            raise ConfigError(self.key(key), "a topic name containing {type}", template)
        return template

    def boolean(self, key: str) -> bool:
        """A TOML boolean, or true/false/1/0 in the environment."""
        value, from_env = self._raw(key)
        if from_env and isinstance(value, str) and value.strip().lower() in _BOOLEANS:
            value = _BOOLEANS[value.strip().lower()]
        if not isinstance(value, bool):
            raise ConfigError(self.key(key), "true or false", value)
        return value

    def optional_file(self, key: str) -> str | None:
        """The path of an existing file (a CA bundle, a certificate, a key), or None."""
        value, _ = self._raw(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str) or not Path(value.strip()).is_file():
            raise ConfigError(self.key(key), "the path of an existing, readable file", value)
        return value.strip()


Read = Callable[[_Section, str], Any]
"""How one key's value is read and checked: `_Section.boolean`, `integer(0, 10)`, ..."""
_T = TypeVar("_T")


Only = tuple[str, tuple[str, ...], str]
"""A field read only while the field named first has one of the values second (the words third
say which, for the error); otherwise it must be unset and keeps its default."""


def setting(
    default: Any, read: Read, *, above: str = "", strict: bool = False, only: Only | None = None
) -> Any:
    """A settings field: its default, how `read_fields` reads its value, the field it must be at
    least (`strict`ly: more than) when `above` names one, and when it may be set at all (`only`)."""
    return dataclasses.field(
        default=default, metadata={"read": read, "above": above, "strict": strict, "only": only}
    )


def read_fields(r: _Section, cls: type[_T]) -> _T:
    """`cls` with every field read as its `setting` says; then each field's `above` bound
    checked: at least (`strict`ly: more than) the field it names."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    read: dict[str, Any] = {}
    for f in fields:
        only = f.metadata.get("only")
        if only is not None and read[only[0]] not in only[1]:
            value, _ = r._raw(f.name)  # one the chosen mode would ignore is an error, not a no-op
            if value is not None and value != "":
                shown = MASK if SENSITIVE_KEY.search(f.name) else value
                raise ConfigError(r.key(f.name), f"set only with {r.key(only[0])} {only[2]}", shown)
            read[f.name] = f.default
        else:
            read[f.name] = f.metadata["read"](r, f.name)
    for f in fields:
        low, high, strict = f.metadata.get("above"), read[f.name], f.metadata.get("strict")
        if low and (high < read[low] or (strict and high == read[low])):
            bound = "more than" if strict else ">="
            raise ConfigError(r.key(f.name), f"{bound} {r.key(low)} ({read[low]})", high)
    return cls(**read)


def integer(lo: int, hi: int) -> Read:
    return lambda r, key: r.integer(key, lo, hi)


def number(lo: float, hi: float, *, lo_open: bool = False) -> Read:
    return lambda r, key: r.number(key, lo, hi, lo_open=lo_open)


def text(pattern: re.Pattern[str] | None = None, form: str = "") -> Read:
    return lambda r, key: r.string(key, pattern, form)


def one_of(choices: tuple[str, ...], *, upper: bool = False, lower: bool = False) -> Read:
    return lambda r, key: r.choice(key, choices, upper=upper, lower=lower)


def _is_http_url(item: str) -> bool:
    try:
        parts = urlsplit(item)
        port = parts.port  # raises ValueError on a malformed or out-of-range port
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and "@" not in parts.netloc  # credentials have settings of their own, masked
        and port != 0
        and not parts.query
        and not parts.fragment
        and not any(c.isspace() for c in item)
    )
