"""A reader of the top-level Dockerfile for the tests: its instructions, continuation lines joined
and comments dropped, as (INSTRUCTION, arguments) pairs in order."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


def instructions(text: str | None = None) -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text() if text is None else text
    found: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, rest = (pending + line).partition(" ")
        found.append((keyword.upper(), rest.strip()))
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"
    return found


def last(keyword: str, text: str | None = None) -> str:
    values = [rest for k, rest in instructions(text) if k == keyword]
    assert values, f"no {keyword} in the Dockerfile"
    return values[-1]


def exec_form(value: str) -> list[str]:
    """An ENTRYPOINT or CMD in JSON (exec) form; the shell form fails."""
    parsed = json.loads(value)
    assert isinstance(parsed, list), f"not the exec form: {value}"
    return [str(item) for item in parsed]


def entrypoint() -> list[str]:
    return exec_form(last("ENTRYPOINT"))
