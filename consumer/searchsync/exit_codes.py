"""The process exit codes of every `searchsync` command (stable: scripts depend on them)."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """What a `searchsync` process tells its caller when it ends."""

    OK = 0
    """Done: a command succeeded, or `run` shut down cleanly."""
    FAILURE = 1
    """An operational failure: a service unreachable, an operation refused, a replay failed."""
    USAGE = 2
    """A usage or configuration error: bad arguments, a bad setting, an unknown aggregate type."""
    DLQ_BUDGET = 3
    """The dead-letter error budget stopped the consumer (see docs/design.md, the DLQ budget)."""
    UNHEALTHY = 4
    """`searchsync status` found a problem (the reasons are printed): the index is not being kept
    up, or may be wrong."""
    BUSY = 5
    """Another process holds what the command needs (`repair --once`: another repair holds the
    lease of one of its types); nothing was done. Try again later."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C (SIGINT) before it finished (the shell's 128 + 2); `run` instead shuts
    down cleanly and exits 0."""
