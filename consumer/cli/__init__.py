"""The ``searchsync`` command: parse arguments, build Settings once, call library code, print.

`consumer.cli.main` is the entry point (the console script is ``consumer.cli:main``); each command
group lives in its own module (`run`, `index`, `dlq`, `offsets`, `loadgen`, `config`) and only
parses, calls the library (`consumer.ops`, `consumer.search.admin`, `consumer.app`) and prints. The
services a command uses come from a `Services` object, which tests replace through
``main(argv, services=...)``.
"""

from __future__ import annotations

from consumer.cli.main import build_parser, main
from consumer.cli.services import Services

__all__ = ["Services", "build_parser", "main"]
