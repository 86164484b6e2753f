"""The application side: change an aggregate's rows and append its outbox event in one transaction,
the root row's ``revision`` rising by one per change and a hard delete's kept as the id's floor
(docs/design.md, invariants 1 and 2). `AggregateWriter` (PyMySQL) and `AsyncAggregateWriter`
(aiomysql) serve any `AggregateTable`; `PageWriter` is the demo's ``wiki_page``."""

from searchsync.writer._drivers import AggregateWriter, AsyncAggregateWriter
from searchsync.writer._table import AggregateTable, Change
from searchsync.writer.page import WIKI_PAGE, Page, PageWriter, Relations

__all__ = [
    "WIKI_PAGE",
    "AggregateTable",
    "AggregateWriter",
    "AsyncAggregateWriter",
    "Change",
    "Page",
    "PageWriter",
    "Relations",
]
