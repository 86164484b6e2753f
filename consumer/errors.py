"""The exception tree, drawn in one place.

Each type means one thing to the pipeline:

    SearchSyncError
    ├── ConfigError          bad configuration: stop start-up, name the key and the expected form
    ├── PoisonMessage        this event can never succeed as it is: send it to the DLQ with `code`
    │   └── RevisionRegression  Elasticsearch holds a newer revision than the truth (id re-created)
    ├── TransientError       may succeed later: retry with backoff (RetryPolicy), then DLQ
    ├── DlqBudgetExceeded    too much is failing: stop the consumer instead of dead-lettering it all
    ├── InvalidRequest       a request that parses but cannot be done (a CLI usage error)
    ├── OperationRefused     an operation that is unsafe now (e.g. resetting a running group)
    └── PageWriteError       the application-side writer (consumer/writer.py) refused a change
        ├── PageNotFound     the page to change does not exist
        ├── PageExists       the page to create exists already
        └── PageStateConflict  the change does not apply (soft-deleting a deleted page, ...)

Backpressure is not an exception: when the cluster rather than the event is at fault (429, 5xx,
unreachable, write-blocked, alias missing, MySQL unreachable), the sink reports it as a systemic
`WriteOutcome` and the pipeline pauses the assigned partitions until a write succeeds again.
"""

from __future__ import annotations


class SearchSyncError(Exception):
    """Base of every error searchsync raises on purpose."""


class ConfigError(SearchSyncError):
    """A configuration value is missing or malformed."""

    def __init__(self, key: str, expected: str, got: object = None) -> None:
        self.key = key
        self.expected = expected
        self.got = got
        shown = "" if got is None else f" (got {got!r})"
        super().__init__(f"config {key}: expected {expected}{shown}")


class PoisonMessage(SearchSyncError):
    """The event cannot be processed as it is; it goes to the DLQ with its reason."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class RevisionRegression(PoisonMessage):
    """Elasticsearch holds a revision above the truth's, even after a fresh re-read."""

    def __init__(self, message: str) -> None:
        super().__init__("REVISION_REGRESSION", message)


class TransientError(SearchSyncError):
    """The operation may succeed if tried again later."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class DlqBudgetExceeded(SearchSyncError):
    """The DLQ error budget is spent: stop rather than dead-letter everything."""


class InvalidRequest(SearchSyncError):
    """A request that parses but does not make sense (unknown partition, offset out of range)."""


class OperationRefused(SearchSyncError):
    """An operation that is unsafe now; the message says what to do first."""


class PageWriteError(SearchSyncError):
    """The application-side writer refused a change; nothing was written (no row, no event)."""

    def __init__(self, page_id: str, message: str) -> None:
        self.page_id = page_id
        super().__init__(f"page {page_id!r}: {message}")


class PageNotFound(PageWriteError):
    """The page to change does not exist (never created, or hard-deleted)."""

    def __init__(self, page_id: str) -> None:
        super().__init__(page_id, "not found")


class PageExists(PageWriteError):
    """The page to create exists already (live or soft-deleted)."""

    def __init__(self, page_id: str) -> None:
        super().__init__(page_id, "exists already")


class PageStateConflict(PageWriteError):
    """The change does not apply to the page's state: a change must change something."""
