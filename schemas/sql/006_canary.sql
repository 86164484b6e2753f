-- The freshness canary's heartbeat (consumer/searchsync/watch/canary.py, docs/design.md "The
-- freshness canary"): one row, raised by `searchsync exporter` every canary.interval_s together
-- with an outbox event of the reserved aggregate type searchsync_canary, projected into its own
-- index. Nothing else reads or writes it.
CREATE TABLE IF NOT EXISTS search_canary (
    id          VARCHAR(64)     NOT NULL,
    beat_at     DATETIME(6)     NOT NULL,
    revision    BIGINT UNSIGNED NOT NULL,
    deleted_at  DATETIME(6)     NULL,
    PRIMARY KEY (id)
);
