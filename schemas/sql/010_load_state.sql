-- searchsync migration 010: the progress of `searchsync index load` (docs/production.md, "The
-- initial load"). Written by the searchsync user (`searchsync schema grants`: SELECT, INSERT,
-- UPDATE). Applied idempotently by deploy/local/migrate.sh (tracked in schema_migrations).
--
-- One row per part of one load. A load is named by `load_key`, the SHA-256 of its target (the
-- alias's write index), its `--where` condition and its number of parts: every process of the
-- same load finds the same rows. The first process plans the parts and inserts all of them in one
-- transaction; `low_id` (exclusive, NULL: from the start) and `high_id` (inclusive, NULL: to the
-- end) never change afterwards, so the parts stay disjoint and cover every key, rows inserted
-- later included. `watermark` is the outbox topics' end offsets taken before the part's first
-- chunk ({"topic": {"partition": offset}}); `last_id` is the keyset position after the last
-- finished chunk, so a killed part continues from it. `rows_done` counts the rows of finished
-- chunks over every run of the part; `runs` counts the runs that wrote at least one chunk.
CREATE TABLE IF NOT EXISTS search_load_state (
    load_key            CHAR(64)        NOT NULL,
    part                INT UNSIGNED    NOT NULL,
    parts               INT UNSIGNED    NOT NULL,
    aggregate_type      VARCHAR(64)     NOT NULL,
    alias_name          VARCHAR(255)    NOT NULL,
    target_index        VARCHAR(255)    NOT NULL,
    where_sql           TEXT            NULL,
    low_id              VARCHAR(512)    NULL,
    high_id             VARCHAR(512)    NULL,
    watermark           JSON            NULL,
    last_id             VARCHAR(512)    NULL,
    rows_done           BIGINT UNSIGNED NOT NULL DEFAULT 0,
    rows_failed         BIGINT UNSIGNED NOT NULL DEFAULT 0,
    chunks_done         BIGINT UNSIGNED NOT NULL DEFAULT 0,
    runs                INT UNSIGNED    NOT NULL DEFAULT 0,
    status              VARCHAR(16)     NOT NULL COMMENT 'pending | loading | scanned | done',
    message             TEXT            NULL,
    started_at          DATETIME(6)     NULL,
    updated_at          DATETIME(6)     NOT NULL,
    finished_at         DATETIME(6)     NULL,
    PRIMARY KEY (load_key, part),
    KEY idx_search_load_alias (alias_name, updated_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
