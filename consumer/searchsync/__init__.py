"""searchsync: keep an Elasticsearch index consistent with MySQL.

The public surface is small on purpose; everything else lives in private modules.
"""

from importlib.metadata import PackageNotFoundError, version

from searchsync.errors import (
    ConfigError,
    DlqBudgetExceeded,
    PoisonMessage,
    RevisionRegression,
    SearchSyncError,
    TransientError,
)
from searchsync.types import Key, Operation, RawMessage, ThinEvent

try:
    __version__ = version("searchsync")  # the installed distribution's (``searchsync --version``)
except PackageNotFoundError:  # a source tree on sys.path without an install
    __version__ = "0+unknown"

__all__ = [
    "ConfigError",
    "DlqBudgetExceeded",
    "Key",
    "Operation",
    "PoisonMessage",
    "RawMessage",
    "RevisionRegression",
    "SearchSyncError",
    "ThinEvent",
    "TransientError",
    "__version__",
]
