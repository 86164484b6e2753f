"""The dead-letter queue: the record and its codec, reading and filtering it, the summary, and the
replay with its ledger. The live path writes dead letters through `searchsync.dlq.record`."""
