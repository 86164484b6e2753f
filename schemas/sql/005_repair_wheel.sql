-- searchsync migration 005: the repair wheel's state (docs/design.md, "Repair").
-- Written by the searchsync user (deploy/local/migrate.sh grants SELECT, INSERT, UPDATE).

-- One wheel epoch per aggregate type: the bucket count M and the canonicalization version it
-- was built with. Changing either starts a new epoch (its buckets start at generation 0).
CREATE TABLE IF NOT EXISTS search_repair_epoch (
    aggregate_type          VARCHAR(64)     NOT NULL,
    epoch                   INT UNSIGNED    NOT NULL,
    bucket_count            INT UNSIGNED    NOT NULL,
    canonicalization_version INT UNSIGNED   NOT NULL,
    created_at              DATETIME(6)     NOT NULL,
    PRIMARY KEY (aggregate_type, epoch)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Per bucket of an epoch: the committed generation (one per complete scan of both sides), the
-- generation of a scan under way (NULL when none; a killed scan leaves it set and the next scan
-- starts the bucket again), the last complete scan, the EWMA of the drift rate (findings per
-- row), the last counts (JSON, by finding kind) and the measured cost of a scan in seconds.
CREATE TABLE IF NOT EXISTS search_repair_bucket (
    aggregate_type      VARCHAR(64)     NOT NULL,
    epoch               INT UNSIGNED    NOT NULL,
    bucket              INT UNSIGNED    NOT NULL,
    generation          BIGINT UNSIGNED NOT NULL DEFAULT 0,
    running_generation  BIGINT UNSIGNED NULL,
    last_complete_at    DATETIME(6)     NULL,
    drift_ewma          DOUBLE          NOT NULL DEFAULT 0,
    last_counts         JSON            NULL,
    cost_s              DOUBLE          NULL,
    rows_seen           BIGINT UNSIGNED NOT NULL DEFAULT 0,
    PRIMARY KEY (aggregate_type, epoch, bucket)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
