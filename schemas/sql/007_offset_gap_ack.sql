-- Who accepted a gap in a partition's history, which records were lost and when (invariant 14).
-- `searchsync offsets reset --accept-gap --execute` appends one row per partition before it moves
-- the offset; rows are never changed or deleted.
CREATE TABLE IF NOT EXISTS search_offset_gap_ack (
    id                  BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    group_id            VARCHAR(255)    NOT NULL,
    topic               VARCHAR(249)    NOT NULL,
    kafka_partition     INT             NOT NULL,
    committed_offset    BIGINT          NOT NULL COMMENT 'where the group stood',
    log_start_offset    BIGINT          NOT NULL COMMENT 'where the partition now begins',
    lost_records        BIGINT          NOT NULL,
    accepted_by         VARCHAR(255)    NOT NULL,
    accepted_at         DATETIME(6)     NOT NULL,
    KEY idx_search_offset_gap_ack_partition (group_id, topic, kafka_partition)
);
