"""The repair job: a hash wheel over MySQL and Elasticsearch that finds drift and heals it by
appending REBUILD outbox events (docs/design.md, "Repair"; invariants 9, 12 and 13)."""
