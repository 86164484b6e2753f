-- searchsync migration 002: the progress of `searchsync rebuild` (docs/design.md, Rebuild).
-- Applied idempotently by deploy/local/migrate.sh (tracked in schema_migrations).
--
-- One row per rebuild. `watermark` is the outbox topics' end offsets taken before the scan
-- ({"topic": {"partition": offset}}); `last_id` is the keyset position of the backfill, so
-- `--resume` continues from it with the same watermark and target index. `active_alias` equals
-- `alias_name` while the rebuild is unfinished and is NULL once it is done or abandoned: the
-- unique key allows at most one unfinished rebuild per alias.
CREATE TABLE IF NOT EXISTS search_rebuild_state (
    rebuild_id          CHAR(32)        NOT NULL,
    aggregate_type      VARCHAR(64)     NOT NULL,
    alias_name          VARCHAR(255)    NOT NULL,
    source_index        VARCHAR(255)    NOT NULL,
    target_index        VARCHAR(255)    NOT NULL,
    schema_version      INT UNSIGNED    NOT NULL,
    catchup_group       VARCHAR(255)    NOT NULL,
    watermark           JSON            NOT NULL,
    last_id             VARCHAR(512)    NULL,
    rows_done           BIGINT UNSIGNED NOT NULL DEFAULT 0,
    rows_failed         BIGINT UNSIGNED NOT NULL DEFAULT 0,
    status              VARCHAR(16)     NOT NULL,
    message             TEXT            NULL,
    active_alias        VARCHAR(255)    NULL,
    started_at          DATETIME(6)     NOT NULL,
    updated_at          DATETIME(6)     NOT NULL,
    finished_at         DATETIME(6)     NULL,
    PRIMARY KEY (rebuild_id),
    UNIQUE KEY uk_search_rebuild_active (active_alias),
    KEY idx_search_rebuild_alias (alias_name, started_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
