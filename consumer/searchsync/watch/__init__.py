"""Watching searchsync from outside the group: `searchsync exporter` and the freshness canary."""
