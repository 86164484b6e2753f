"""Port contracts: the same cases run against the in-memory fakes (tests/unit) and the real
services (tests/integration)."""
