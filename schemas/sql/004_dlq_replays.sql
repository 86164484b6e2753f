-- searchsync migration 004: the DLQ replay ledger (docs/design.md, "DLQ replay ledger").
-- Applied idempotently by deploy/local/migrate.sh (tracked in schema_migrations).
--
-- One row per dead letter replayed: which one (its DLQ topic/partition/offset and event), the
-- selection (filters) of the `searchsync dlq replay` that sent it, when, and where the re-produced
-- message landed (`replayed_to_*`: a later dead letter whose original position is that one was
-- dead-lettered again). Append-only: the searchsync user may SELECT and INSERT, nothing else.
CREATE TABLE IF NOT EXISTS search_dlq_replay (
    id                      BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    dlq_topic               VARCHAR(249)    NOT NULL,
    dlq_partition           INT UNSIGNED    NOT NULL,
    dlq_offset              BIGINT UNSIGNED NOT NULL,
    event_id                VARCHAR(64)     NULL,
    aggregate_type          VARCHAR(64)     NULL,
    aggregate_id            VARCHAR(128)    NULL,
    source_revision         BIGINT UNSIGNED NULL,
    error_code              VARCHAR(64)     NOT NULL,
    replayed_to_topic       VARCHAR(249)    NOT NULL,
    replayed_to_partition   INT UNSIGNED    NOT NULL,
    replayed_to_offset      BIGINT UNSIGNED NULL,
    selection               JSON            NOT NULL,
    run_id                  CHAR(32)        NOT NULL,
    replayed_at             DATETIME(6)     NOT NULL,
    PRIMARY KEY (id),
    KEY idx_search_dlq_replay_position (dlq_topic, dlq_partition, dlq_offset),
    KEY idx_search_dlq_replay_time (dlq_topic, replayed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
