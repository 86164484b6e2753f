"""The ``searchsync`` command (console script ``searchsync.cli:main``); a module per command
group, each command's services from a `searchsync.runtime.Runtime` (tests pass fakes)."""

from __future__ import annotations

from searchsync.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
