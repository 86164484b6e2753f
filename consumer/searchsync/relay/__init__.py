"""The polling relay (`searchsync relay`): publishes ``search_outbox`` rows to Kafka exactly as
Debezium's Outbox Event Router does, for deployments without Kafka Connect (docs/relay.md)."""
