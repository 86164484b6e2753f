"""The processor's answer for one work, which the pipeline acts on.

A work either finished (APPLIED, ALREADY_APPLIED: it carries the document written or found) or
FAILED with an `ErrorCode`, whose disposition (`searchsync.errors`) says what happens next.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from searchsync.errors import Disposition, ErrorCode, disposition
from searchsync.projection import Document
from searchsync.stream.coalesce import Work

__all__ = ["Result", "Verdict"]


class Result(enum.Enum):
    APPLIED = "applied"  # written now
    ALREADY_APPLIED = "already_applied"  # the index held exactly this revision
    FAILED = "failed"  # `code` says why; its disposition says what the pipeline does next


@dataclass(frozen=True, slots=True)
class Verdict:
    """What became of one work. A FAILED verdict has a `code`; the others have a `document`.

    `unexpected`: the failure is an exception nobody classified (a bug), which is retried before
    it is dead-lettered whatever its code (`searchsync.errors.disposition`).
    """

    work: Work
    result: Result
    code: ErrorCode | None = None
    message: str | None = None
    unexpected: bool = False
    document: Document | None = None
    alias: str | None = None
    loaded_revision: int | None = None
    schema_version: int | None = None

    def __post_init__(self) -> None:
        if (self.result is Result.FAILED) != (self.code is not None):
            raise ValueError("a verdict has an error code exactly when it failed")

    @property
    def finished(self) -> bool:
        return self.result in (Result.APPLIED, Result.ALREADY_APPLIED)

    @property
    def disposition(self) -> Disposition:
        """What to do with a FAILED verdict (`searchsync.errors`' table)."""
        if self.code is None:
            raise ValueError(f"a {self.result.value} verdict has no disposition")
        return disposition(self.code, unexpected=self.unexpected)
