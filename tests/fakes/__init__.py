"""One in-memory fake per port, shared by the unit tests; each is held to its port's contract
(tests/contract), which also runs against the real service in tests/integration."""
