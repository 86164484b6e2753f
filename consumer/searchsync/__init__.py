"""searchsync: keep an Elasticsearch index consistent with MySQL.

The public surface is small on purpose; everything else lives in private modules.
"""

from searchsync.errors import (
    ConfigError,
    DlqBudgetExceeded,
    PoisonMessage,
    RevisionRegression,
    SearchSyncError,
    TransientError,
)
from searchsync.types import Key, Operation, Position, ThinEvent
from searchsync.version import __version__

__all__ = [
    "ConfigError",
    "DlqBudgetExceeded",
    "Key",
    "Operation",
    "PoisonMessage",
    "Position",
    "RevisionRegression",
    "SearchSyncError",
    "ThinEvent",
    "TransientError",
    "__version__",
]
