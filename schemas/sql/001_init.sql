-- searchsync source contract, migration 001: the outbox, the projection state, the revision floor.
-- Applied idempotently by deploy/local/migrate.sh (tracked in schema_migrations); `searchsync schema
-- sql` prints it. The business tables are yours (the demo's wiki_page: schemas/sql/demo/).

-- The transactional outbox (docs/design.md), plus `payload`: the thin event as JSON, which Debezium's Outbox
-- Event Router publishes (table.field.event.payload=payload). The polling columns (docs/relay.md)
-- (status .. last_error) are kept for a polling relay; the Debezium path ignores them.
CREATE TABLE IF NOT EXISTS search_outbox (
    id                  BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    event_id            CHAR(36)        NOT NULL,
    aggregate_type      VARCHAR(64)     NOT NULL,
    aggregate_id        VARCHAR(128)    NOT NULL,
    operation           VARCHAR(16)     NOT NULL,
    source_revision     BIGINT UNSIGNED NOT NULL,
    payload             JSON            NOT NULL,

    status              VARCHAR(16)     NOT NULL DEFAULT 'PENDING',
    available_at        DATETIME(6)     NOT NULL,
    attempts            INT UNSIGNED    NOT NULL DEFAULT 0,
    locked_by           VARCHAR(128)    NULL,
    locked_at           DATETIME(6)     NULL,
    last_error          TEXT            NULL,

    created_at          DATETIME(6)     NOT NULL,
    updated_at          DATETIME(6)     NOT NULL,

    PRIMARY KEY (id),
    UNIQUE KEY uk_search_outbox_event (event_id),
    KEY idx_search_outbox_poll (status, available_at, id),
    KEY idx_search_outbox_entity (aggregate_type, aggregate_id, source_revision),
    CONSTRAINT ck_search_outbox_operation CHECK (operation IN ('UPSERT', 'TOMBSTONE', 'REBUILD'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- What searchsync last indexed for each aggregate (docs/design.md, "Repair"), written by the consumer.
CREATE TABLE IF NOT EXISTS search_projection_state (
    aggregate_type              VARCHAR(64)     NOT NULL,
    aggregate_id                VARCHAR(128)    NOT NULL,
    source_revision             BIGINT UNSIGNED NOT NULL,
    indexed_revision            BIGINT UNSIGNED NULL,
    projection_schema_version   INT UNSIGNED    NULL,
    projection_hash             CHAR(64)        NULL,
    last_success_at             DATETIME(6)     NULL,
    last_error_code             VARCHAR(64)     NULL,
    last_error_message          VARCHAR(1024)   NULL,
    last_error_at               DATETIME(6)     NULL,
    PRIMARY KEY (aggregate_type, aggregate_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Revision floor for hard deletes: when an application hard-deletes a row, the writer records
-- the delete's revision here in the same transaction, so an id created again continues at
-- floor + 1 instead of restarting at 1 (which Elasticsearch's external versions would refuse).
CREATE TABLE IF NOT EXISTS search_revision_floor (
    aggregate_type  VARCHAR(64)     NOT NULL,
    aggregate_id    VARCHAR(128)    NOT NULL,
    revision        BIGINT UNSIGNED NOT NULL,
    deleted_at      DATETIME(6)     NOT NULL,
    PRIMARY KEY (aggregate_type, aggregate_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
