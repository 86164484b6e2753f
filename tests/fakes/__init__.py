"""One fake per port, each held to its contract suite (tests/contract/)."""
