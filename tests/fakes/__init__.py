"""In-memory fakes of searchsync's ports, shared by unit tests."""
