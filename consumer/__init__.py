"""searchsync: keep an Elasticsearch index consistent with MySQL.

The public surface is small on purpose; everything else lives in private modules.
"""

from consumer.errors import (
    ConfigError,
    DlqBudgetExceeded,
    PoisonMessage,
    RevisionRegression,
    SearchSyncError,
    TransientError,
)
from consumer.types import Key, Operation, Position, ThinEvent

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
]
