"""`searchsync index load`: the initial load of the rows that exist before searchsync."""
