-- One repair per aggregate type at a time: the lease a running `searchsync repair` holds on each
-- type it scans, renewed while it runs. Another repair of the type waits (--daemon) or exits
-- (--once) until `expires_at` has passed; times are the database's own (NOW(6)).
CREATE TABLE IF NOT EXISTS search_repair_lease (
    aggregate_type      VARCHAR(64)     NOT NULL PRIMARY KEY,
    holder              VARCHAR(255)    NOT NULL COMMENT 'user@host pid N (token)',
    acquired_at         DATETIME(6)     NOT NULL,
    expires_at          DATETIME(6)     NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
