"""The ``searchsync`` command: parse arguments, build Settings once, call library code, print.

The console script is ``searchsync.cli:main``; each command group lives in its own module. A
command's services come from a `searchsync.runtime.Runtime`; tests pass one built on fakes
through ``main(argv, runtime=...)``.
"""

from __future__ import annotations

from searchsync.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
