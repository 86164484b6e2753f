"""The application side: change an aggregate's rows and append its outbox event in one transaction.

The business rows and the outbox row commit together or not at all, and the root row's ``revision``
rises by exactly one per change (the root row is locked first); a hard delete records its revision
in ``search_revision_floor`` so a re-created id continues above it (docs/design.md, invariants 1 and
2). `AggregateWriter` (PyMySQL) and `AsyncAggregateWriter` (aiomysql) serve any `AggregateTable`;
`PageWriter` is the demo's ``wiki_page``.
"""

from searchsync.mysql.outbox import append_outbox
from searchsync.writer._async import AsyncAggregateWriter
from searchsync.writer._sync import AggregateWriter
from searchsync.writer._table import AggregateTable, Change
from searchsync.writer.page import AGGREGATE_TYPE, WIKI_PAGE, Page, PageWriter, Relations

__all__ = [
    "AGGREGATE_TYPE",
    "WIKI_PAGE",
    "AggregateTable",
    "AggregateWriter",
    "AsyncAggregateWriter",
    "Change",
    "Page",
    "PageWriter",
    "Relations",
    "append_outbox",
]
