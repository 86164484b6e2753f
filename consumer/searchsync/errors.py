"""The exception tree and the error-code table, drawn in one place.

Each exception type means one thing::

    SearchSyncError
    ├── ConfigError          bad configuration: stop start-up, name the key and the expected form
    ├── PoisonMessage        this event cannot be processed as it is; carries an `ErrorCode`
    │   └── RevisionRegression  Elasticsearch holds a newer revision than the truth (id re-created)
    ├── TransientError       an operation failed and may succeed later; carries an `ErrorCode`
    ├── DlqBudgetExceeded    too much is failing: stop the consumer instead of dead-lettering it all
    ├── InvalidRequest       a request that parses but cannot be done (a CLI usage error)
    ├── OperationRefused     an operation that is unsafe now (e.g. resetting a running group)
    │   ├── LeaseHeld           another repair holds a lease this one needs
    │   └── LeaseLost           the repair's lease ran out before it was renewed
    ├── IndexAdminError      the cluster refused an index or alias operation
    │   ├── IndexExists         the name to create is taken
    │   ├── IndexMissing        the index is not there
    │   └── AliasConflict       an alias operation's precondition does not hold
    ├── ConnectUnavailable   Kafka Connect did not answer a connector status
    └── WriteRefused         the application-side writer (searchsync.writer) refused a change
        ├── AggregateNotFound       the row to change does not exist
        ├── AggregateExists         the row to create exists already
        └── AggregateStateConflict  the change does not apply (soft-deleting a deleted row, ...)

Outside the tree: `InvalidIndexName` and `CanonicalizationError` (ValueErrors: a name the engine
refuses, a value with no canonical JSON form), `LiveLagTooHigh` (the live-lag guard's wait ran out),
`DeliveryFailed` and `DeliveryTimeout` (a produce the broker refused, or did not acknowledge).

What the pipeline does with a failure is decided by its `ErrorCode` alone, through the one table
below (`ErrorCode.disposition`); nothing else compares codes. A code's string value is what the
DLQ record's ``last_error_code``, the state table and the metrics labels carry::

    failure of one work
    ├── POISON     can never succeed as it is: dead-letter at once
    ├── TRANSIENT  this work may succeed later: retry with backoff (RetryPolicy) up to
    │              retry_max_attempts, then dead-letter with the last code
    └── SYSTEMIC   a shared dependency is down (ES, MySQL, the DLQ topic): pause intake, retry
                   without spending the work's attempts, never dead-letter

    code                    disposition  meaning
    ----------------------  -----------  -----------------------------------------------------
    EMPTY                   POISON       the message has no value
    TOO_LARGE               POISON       the value is above pipeline.max_event_bytes
    BAD_AVRO                POISON       not a ThinEvent in Avro (Confluent or single-object)
    BAD_JSON                POISON       not a JSON object in any Debezium shape
    MISSING_FIELD           POISON       a field of the event is missing or null
    BAD_FIELD               POISON       a string field is empty, too long or unprintable
    BAD_OPERATION           POISON       operation is not UPSERT, TOMBSTONE or REBUILD
    BAD_REVISION            POISON       source_revision is not an integer in 1..2^63-1
    UNKNOWN_AGGREGATE_TYPE  POISON       no projector registered for the aggregate type
    PROJECTION_ERROR        POISON       the projector cannot build a document from the row
    REVISION_REGRESSION     POISON       the truth is older than the event or the index
    MAPPING_ERROR           POISON       Elasticsearch refused the document for its mapping
    ES_400                  POISON       any other 400 for this document
    ES_4XX                  POISON       any other 4xx for this document (status in the message)
    BAD_DLQ_RECORD          POISON       a DLQ message that is not a DLQ record
    INTERNAL                TRANSIENT    an unexpected exception (a bug) while handling one work
    MYSQL_DEADLOCK          TRANSIENT    the read was chosen as a deadlock victim
    MYSQL_LOCK_TIMEOUT      TRANSIENT    the read waited too long for a lock
    ES_409                  TRANSIENT    a version conflict before the stored version is read
    ES_409_UNCONFIRMED      TRANSIENT    a 409, but the stored version is not above ours
    ES_AHEAD                TRANSIENT    the index moved ahead again while re-checking
    ES_TOO_LARGE            TRANSIENT    413: one document above http.max_content_length
    ES_MGET                 TRANSIENT    reading one stored version failed
    ES_UNEXPECTED           TRANSIENT    a status the sink does not know
    MYSQL_UNAVAILABLE       SYSTEMIC     MySQL cannot be reached (down, away, too many conns)
    ES_UNAVAILABLE          SYSTEMIC     Elasticsearch cannot be reached
    ES_TIMEOUT              SYSTEMIC     Elasticsearch did not answer in time (or 408)
    ES_429                  SYSTEMIC     Elasticsearch rejects for load
    ES_5XX                  SYSTEMIC     Elasticsearch failed on its side
    ES_BLOCKED              SYSTEMIC     the index is write-blocked (flood stage, read-only)
    ES_AUTH                 SYSTEMIC     401/403: credentials or privileges
    ALIAS_MISSING           SYSTEMIC     the write alias does not exist (run `index init`)
    SCHEMA_FENCED           SYSTEMIC     the write index holds another projection schema version
    OWNER_FENCED            SYSTEMIC     another member took the partition's owner epoch, or a
                                         previous owner's rewrite still holds it: take it again
    KAFKA_NO_LEADER         SYSTEMIC     a topic's partitions have no leader (yet)
    DLQ_QUEUE_FULL          SYSTEMIC     the DLQ producer's queue is full
    DLQ_PRODUCE_FAILED      SYSTEMIC     the DLQ produce was refused
    DLQ_DELIVERY_FAILED     SYSTEMIC     the broker did not acknowledge a dead letter
    DLQ_READ_FAILED         SYSTEMIC     reading the DLQ topic failed
    DLQ_READ_TIMEOUT        SYSTEMIC     the DLQ topic was not read to its end in time
    REPLAY_FAILED           SYSTEMIC     a replayed event was not acknowledged by the broker
    REPLAY_TIMEOUT          SYSTEMIC     no acknowledgement for a replayed event in time

An unexpected exception from a projector is recorded as PROJECTION_ERROR but retried first like a
TRANSIENT code (`Work.disposition`); anywhere else it is INTERNAL. Either way it fails only that
one work.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, Protocol

MAX_ERROR_MESSAGE: Final = 1024
"""The longest error message kept, in characters: the state table's ``last_error_message`` column
(VARCHAR(1024)) and the DLQ record's ``last_error_message`` cut to it alike."""


class Disposition(enum.Enum):
    """What the pipeline does with a failed work."""

    POISON = "poison"  # dead-letter at once
    TRANSIENT = "transient"  # retry with backoff up to the attempt limit, then dead-letter
    SYSTEMIC = "systemic"  # pause intake, retry without spending attempts, never dead-letter


class ErrorCode(enum.StrEnum):
    """Why something failed. The value is the wire form (DLQ records, state table, metrics)."""

    EMPTY = "EMPTY"
    TOO_LARGE = "TOO_LARGE"
    BAD_AVRO = "BAD_AVRO"
    BAD_JSON = "BAD_JSON"
    MISSING_FIELD = "MISSING_FIELD"
    BAD_FIELD = "BAD_FIELD"
    BAD_OPERATION = "BAD_OPERATION"
    BAD_REVISION = "BAD_REVISION"
    UNKNOWN_AGGREGATE_TYPE = "UNKNOWN_AGGREGATE_TYPE"
    PROJECTION_ERROR = "PROJECTION_ERROR"
    REVISION_REGRESSION = "REVISION_REGRESSION"
    MAPPING_ERROR = "MAPPING_ERROR"
    ES_400 = "ES_400"
    ES_4XX = "ES_4XX"
    BAD_DLQ_RECORD = "BAD_DLQ_RECORD"
    INTERNAL = "INTERNAL"
    MYSQL_DEADLOCK = "MYSQL_DEADLOCK"
    MYSQL_LOCK_TIMEOUT = "MYSQL_LOCK_TIMEOUT"
    ES_409 = "ES_409"
    ES_409_UNCONFIRMED = "ES_409_UNCONFIRMED"
    ES_AHEAD = "ES_AHEAD"
    ES_TOO_LARGE = "ES_TOO_LARGE"
    ES_MGET = "ES_MGET"
    ES_UNEXPECTED = "ES_UNEXPECTED"
    MYSQL_UNAVAILABLE = "MYSQL_UNAVAILABLE"
    ES_UNAVAILABLE = "ES_UNAVAILABLE"
    ES_TIMEOUT = "ES_TIMEOUT"
    ES_429 = "ES_429"
    ES_5XX = "ES_5XX"
    ES_BLOCKED = "ES_BLOCKED"
    ES_AUTH = "ES_AUTH"
    ALIAS_MISSING = "ALIAS_MISSING"
    SCHEMA_FENCED = "SCHEMA_FENCED"
    OWNER_FENCED = "OWNER_FENCED"
    KAFKA_NO_LEADER = "KAFKA_NO_LEADER"
    DLQ_QUEUE_FULL = "DLQ_QUEUE_FULL"
    DLQ_PRODUCE_FAILED = "DLQ_PRODUCE_FAILED"
    DLQ_DELIVERY_FAILED = "DLQ_DELIVERY_FAILED"
    DLQ_READ_FAILED = "DLQ_READ_FAILED"
    DLQ_READ_TIMEOUT = "DLQ_READ_TIMEOUT"
    REPLAY_FAILED = "REPLAY_FAILED"
    REPLAY_TIMEOUT = "REPLAY_TIMEOUT"

    @property
    def disposition(self) -> Disposition:
        """This code's row of the table (the module docstring)."""
        return _DISPOSITIONS[self]


# The table of the module docstring, by disposition (a misspelt name fails at import).
_BY_DISPOSITION: Final = {
    Disposition.POISON: """
        EMPTY TOO_LARGE BAD_AVRO BAD_JSON MISSING_FIELD BAD_FIELD BAD_OPERATION BAD_REVISION
        UNKNOWN_AGGREGATE_TYPE PROJECTION_ERROR REVISION_REGRESSION MAPPING_ERROR ES_400 ES_4XX
        BAD_DLQ_RECORD
    """,
    Disposition.TRANSIENT: """
        INTERNAL MYSQL_DEADLOCK MYSQL_LOCK_TIMEOUT ES_409 ES_409_UNCONFIRMED ES_AHEAD ES_TOO_LARGE
        ES_MGET ES_UNEXPECTED
    """,
    Disposition.SYSTEMIC: """
        MYSQL_UNAVAILABLE ES_UNAVAILABLE ES_TIMEOUT ES_429 ES_5XX ES_BLOCKED ES_AUTH ALIAS_MISSING
        SCHEMA_FENCED OWNER_FENCED KAFKA_NO_LEADER DLQ_QUEUE_FULL DLQ_PRODUCE_FAILED
        DLQ_DELIVERY_FAILED DLQ_READ_FAILED DLQ_READ_TIMEOUT REPLAY_FAILED REPLAY_TIMEOUT
    """,
}
_DISPOSITIONS: Final[Mapping[ErrorCode, Disposition]] = MappingProxyType(
    {ErrorCode(name): d for d, names in _BY_DISPOSITION.items() for name in names.split()}
)


class SearchSyncError(Exception):
    """Base of every error searchsync raises on purpose."""


class ConfigError(SearchSyncError):
    """A configuration value is missing or malformed."""

    def __init__(
        self, key: str, expected: str, got: object = None, *, cause: str | None = None
    ) -> None:
        self.key = key
        self.expected = expected
        self.got = got
        self.cause = cause  # what went wrong, when more than "not the expected form"
        shown = "" if got is None else f" (got {got!r})"
        self.detail = (
            f"expected {expected}{shown}" if cause is None else f"{cause}\n  expected {expected}"
        )
        super().__init__(f"config {key}: {self.detail}")


class PoisonMessage(SearchSyncError):
    """The event cannot be processed as it is; it goes to the DLQ with its reason."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class RevisionRegression(PoisonMessage):
    """Elasticsearch holds a revision above the truth's, even after a fresh re-read."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.REVISION_REGRESSION, message)


class TransientError(SearchSyncError):
    """The operation may succeed if tried again later."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class DlqBudgetExceeded(SearchSyncError):
    """The DLQ error budget is spent: stop rather than dead-letter everything."""


class InvalidRequest(SearchSyncError):
    """A request that parses but does not make sense (unknown partition, offset out of range)."""


class OperationRefused(SearchSyncError):
    """An operation that is unsafe now; the message says what to do first."""


class WriteRefused(SearchSyncError):
    """The application-side writer (`searchsync.writer`) refused a change; nothing was written
    (no row, no event). A subclass's `reason` is its message when none is given."""

    reason = ""

    def __init__(self, aggregate_type: str, aggregate_id: str, message: str | None = None) -> None:
        self.aggregate_type = aggregate_type
        self.aggregate_id = aggregate_id
        super().__init__(f"{aggregate_type} {aggregate_id!r}: {message or self.reason}")


class AggregateNotFound(WriteRefused):
    """The row to change does not exist (never created, or hard-deleted)."""

    reason = "not found"


class AggregateExists(WriteRefused):
    """The row to create exists already (live or soft-deleted)."""

    reason = "exists already"


class AggregateStateConflict(WriteRefused):
    """The change does not apply to the row's state: a change must change something."""


class _Holder(Protocol):  # searchsync.ops.repair.lease.Holder
    def describe(self) -> str: ...


class LeaseHeld(OperationRefused):
    """Another repair holds a lease this one needs; nothing was scanned."""

    def __init__(self, held: Sequence[_Holder]) -> None:
        self.held = tuple(held)
        super().__init__(
            "; ".join(h.describe() for h in held)
            + ": one repair per type runs at a time. Wait for it to finish, or stop it "
            "(its lease then runs out after repair.lease_s)"
        )


class LeaseLost(OperationRefused):
    """The lease could not be renewed before it ran out: the repair stopped."""


class IndexAdminError(SearchSyncError):
    """The cluster refused an index or alias operation; `type` is Elasticsearch's error type."""

    def __init__(self, name: str, message: str, error_type: str | None = None) -> None:
        self.name = name
        self.type = error_type
        super().__init__(f"{name}: {message}")


class IndexExists(IndexAdminError):
    """The name to create is taken (by an index or an alias)."""


class IndexMissing(IndexAdminError): ...


class AliasConflict(IndexAdminError):
    """An alias operation's precondition does not hold (nothing was changed)."""


class ConnectUnavailable(SearchSyncError):
    """Kafka Connect did not answer, or answered something that is not a connector status."""


class InvalidIndexName(ValueError):
    """A name Elasticsearch would refuse, or one that does not follow searchsync's layout."""


class CanonicalizationError(ValueError):
    """The value has no canonical form under the canonical JSON rules (projection.canonical)."""


class LiveLagTooHigh(Exception):
    """The live group's lag stayed above ``repair.max_live_lag`` for the whole wait."""


class DeliveryFailed(Exception):
    """The broker answered, and not "written" (`error` is the KafkaError)."""

    def __init__(self, error: Any) -> None:
        self.error = error
        super().__init__(str(error))


class DeliveryTimeout(Exception):
    """No answer before the deadline: the message may or may not be written."""
