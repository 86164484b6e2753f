-- searchsync migration 009: defaults for the outbox's time columns (docs/outbox.md), so an
-- application in any language appends an event with a six-column INSERT (event_id,
-- aggregate_type, aggregate_id, operation, source_revision, payload).
-- MODIFY with the same type changes only the default: valid on MySQL 8 and MariaDB 10.6+, and
-- idempotent. A writer may still set the three columns itself (searchsync's Python writer does).
ALTER TABLE search_outbox
    MODIFY COLUMN available_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    MODIFY COLUMN created_at   DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    MODIFY COLUMN updated_at   DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6);
