"""README.md's command table and the command tree say the same thing: every command is in the
table, every flag a row names is the command's, and every flag of a command is in its row
(``--help`` and ``--config`` are every command's; ``--dry-run`` goes with ``--execute``; FILTERS
are the dlq filters listed under the table)."""

from __future__ import annotations

import argparse
import re
from functools import cache
from pathlib import Path

import pytest
from searchsync.cli import build_parser

README = Path(__file__).resolve().parents[2] / "README.md"
EVERYWHERE = frozenset({"-h", "--help", "--config"})
FLAG = re.compile(r"--[a-z][a-z-]*")


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every leaf command by its path ("offsets show")."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            found[path] = parser
            return
        for name, child in subs[0].choices.items():
            walk(child, f"{path} {name}".strip())

    walk(build_parser(), "")
    return found


COMMANDS = _commands()


def _table_rows() -> list[str]:
    """The first cell of each row of the table under "## The `searchsync` command"."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## The `searchsync` command", 1)[1]
    rows = [line for line in section.splitlines()[2:] if line.startswith("|")]
    return [re.split(r"(?<!\\)\|", row)[1] for row in rows[2:]]


def _filters() -> set[str]:
    text = README.read_text(encoding="utf-8")
    paragraph = text.split("\nFILTERS:", 1)[1].split("\n\n", 1)[0]
    return set(FLAG.findall(paragraph))


@cache
def documented() -> dict[str, set[str]]:
    """The flags the README gives each command: a code span that starts with a command's path
    (after an optional ``searchsync``) starts it; the spans after it, up to the next one, add to
    it."""
    flags: dict[str, set[str]] = {}
    for cell in _table_rows():
        current: str | None = None
        for span in re.findall(r"`([^`]*)`", cell):
            words = span.removeprefix("searchsync ").split()
            path = next(
                (" ".join(words[:n]) for n in (2, 1) if " ".join(words[:n]) in COMMANDS), None
            )
            if path is not None:
                current = path
                flags.setdefault(current, set())
            if current is not None:
                flags[current] |= set(FLAG.findall(span))
                if "FILTERS" in span:
                    flags[current] |= _filters()
    return flags


def test_every_command_is_in_the_table() -> None:
    assert sorted(documented()) == sorted(COMMANDS)


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_the_table_and_the_help_name_the_same_flags(path: str) -> None:
    given = documented().get(path, set())
    actions = [a for a in COMMANDS[path]._actions if a.option_strings]
    known = {flag for a in actions for flag in a.option_strings}
    assert given <= known, f"README names flags `searchsync {path}` does not take"
    missing = [
        a.option_strings
        for a in actions
        if not set(a.option_strings) & (given | EVERYWHERE)
        and not (a.option_strings == ["--dry-run"] and "--execute" in given)
    ]
    assert missing == [], f"README does not name these flags of `searchsync {path}`"
