"""The read side: what an application needs to read the index it keeps (docs/read-side.md).

- Query the read alias ``<alias>_live`` (`searchsync.naming.read_alias_name`): it never shows a
  tombstone (docs/design.md, invariant 15).
- Read your writes: `wait_for_revision` (async) and `wait_for_revision_sync` wait, bounded by a
  timeout, until the revision a write returned is indexed or searchable.
- Prove hits against MySQL: `verified_search`.
"""

from searchsync.read.sync import wait_for_revision_sync
from searchsync.read.verified import Freshness, VerifiedHit, VerifiedResult, verified_search
from searchsync.read.wait import Backoff, Until, WaitResult, wait_for_revision

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
