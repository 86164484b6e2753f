"""`searchsync rebuild`: a new physical index behind the alias, without downtime or lost writes
(docs/design.md, Rebuild). `runner.Rebuilder` runs the steps; each module does one of them."""
