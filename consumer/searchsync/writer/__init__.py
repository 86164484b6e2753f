"""The application side: change an aggregate's rows and append its outbox event in one transaction.

It keeps the first two invariants of docs/design.md for any aggregate type: the business rows
and the outbox row commit together or not at all, and the root row's ``revision`` rises by
exactly one on every change (each change locks the root row first, so concurrent writers of one
id serialize). A hard delete records its revision in ``search_revision_floor``, so re-creating
the id continues at ``floor + 1``, above the tombstone.

- `AggregateTable`: where a type's root rows live (table, id, revision, deleted_at, updated_at).
- `AggregateWriter` (PyMySQL) and `AsyncAggregateWriter` (aiomysql): ``create``, ``update``,
  ``soft_delete``, ``restore``, ``hard_delete``, each a context manager yielding a `Change`
  through which the caller writes its own columns and child rows; the committed revision is
  ``change.revision``.
- `PageWriter`: the demo's ``wiki_page`` type on `AsyncAggregateWriter`.
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
