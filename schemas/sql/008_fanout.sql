-- searchsync migration 008: fan-out jobs of related aggregates (docs/design.md, "Fan-out").
-- Written by the searchsync user (deploy/local/migrate.sh grants SELECT, INSERT, UPDATE).
--
-- One row per (referenced aggregate, dependent type, lookup): the consumer records it, in the
-- batch of the referenced aggregate's event and before that event's offset may be committed;
-- the fan-out worker pages the dependents' ids out of the dependent type's table
-- (`WHERE <via> = referenced_id AND id > cursor_id ORDER BY id`) and appends one REBUILD outbox
-- event per dependent, moving `cursor_id` in the same transaction as the appends. A newer
-- revision of the referenced aggregate restarts the pass (cursor back to ''); a job that is done
-- stays as the record of its last pass.
CREATE TABLE IF NOT EXISTS search_fanout (
    id                  BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    referenced_type     VARCHAR(64)     NOT NULL,
    referenced_id       VARCHAR(255)    NOT NULL,
    dependent_type      VARCHAR(64)     NOT NULL,
    lookup_name         VARCHAR(64)     NOT NULL,
    revision            BIGINT UNSIGNED NOT NULL COMMENT 'newest revision of the referenced row',
    status              VARCHAR(16)     NOT NULL COMMENT 'pending | done',
    cursor_id           VARCHAR(255)    NOT NULL DEFAULT '' COMMENT 'last dependent id enqueued',
    appended            BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'REBUILDs appended this pass',
    locked_by           VARCHAR(255)    NULL,
    locked_until        DATETIME(6)     NULL,
    created_at          DATETIME(6)     NOT NULL,
    updated_at          DATETIME(6)     NOT NULL,
    finished_at         DATETIME(6)     NULL,
    UNIQUE KEY uq_search_fanout_target (referenced_type, referenced_id, dependent_type, lookup_name),
    KEY idx_search_fanout_status (status, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
