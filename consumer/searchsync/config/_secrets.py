"""Secrets in settings: `Secret` never shows its value (repr and str are ``***``); `SENSITIVE_KEY`
names credential settings; `scrub_credentials` and `scrub_known` mask URL passwords and known
secret values in text (each log line)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

MASK: Final = "***"
SENSITIVE_KEY: Final = re.compile(
    r"password|passwd|secret|token|credential|api[_.-]?key|pem|jaas", re.IGNORECASE
)
# scheme://user:password@ : neither part holds a space, '/', '@', a quote or a backslash
_URL_CREDENTIALS: Final = re.compile(
    r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@\"'\\]*:)[^\s/@\"'\\]*@"
)
_MIN_KNOWN: Final = 4  # shorter secrets would mask ordinary words; they are not worth a secret


class Secret:
    """A string that never shows itself in a repr, a log line or a traceback."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The real value, for the one call that needs it (e.g. the MySQL connect)."""
        return self._value

    def __repr__(self) -> str:
        return MASK

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def scrub_credentials(text: str) -> str:
    """`text` with the password of every ``scheme://user:password@`` replaced by ``***``."""
    if "://" not in text or "@" not in text:
        return text
    return _URL_CREDENTIALS.sub(lambda m: f"{m['head']}{MASK}@", text)


def scrub_known(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of each secret value (at least 4 characters) masked."""
    for value in secrets:
        if len(value) >= _MIN_KNOWN and value in text:
            text = text.replace(value, MASK)
    return text
