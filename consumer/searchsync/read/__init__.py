"""The read side: what an application needs to read the index it keeps (docs/read-side.md): the
read alias ``<alias>_live`` (never a tombstone), read-your-writes waits, and `verified_search`."""

from searchsync.read.verified import Freshness, VerifiedHit, VerifiedResult, verified_search
from searchsync.read.wait import (
    Backoff,
    Until,
    WaitResult,
    wait_for_revision,
    wait_for_revision_sync,
)

__all__ = [
    "Backoff",
    "Freshness",
    "Until",
    "VerifiedHit",
    "VerifiedResult",
    "WaitResult",
    "verified_search",
    "wait_for_revision",
    "wait_for_revision_sync",
]
