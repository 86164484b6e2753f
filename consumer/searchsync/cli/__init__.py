"""The ``searchsync`` command: parse arguments, build Settings once, call library code, print.

`searchsync.cli.main` is the entry point (the console script is ``searchsync.cli:main``); each
command group lives in its own module (`run`, `index`, `dlq`, `offsets`, `loadgen`, `config`) and
only parses, calls the library (`searchsync.ops`, `searchsync.search.admin`, `searchsync.app`) and
prints. The services a command uses come from a `searchsync.runtime.Runtime`; tests pass one
built on fakes through ``main(argv, runtime=...)``.
"""

from __future__ import annotations

from searchsync.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
