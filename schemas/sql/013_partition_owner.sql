-- The owner epoch of each partition a consumer group reads (invariant 17). A member takes the
-- epoch of a partition (adds one) before it reads the truth for that partition's events, and
-- checks it under a shared lock around every rewrite at an unchanged revision: a member that lost
-- the partition and still runs finds another epoch and writes nothing, and a new owner's take waits
-- for a rewrite in progress to end. `holder` and `taken_at` only say who took it last and when.
CREATE TABLE IF NOT EXISTS search_partition_owner (
    group_id            VARCHAR(255)    NOT NULL,
    topic               VARCHAR(249)    NOT NULL,
    partition_id        INT             NOT NULL,
    epoch               BIGINT          NOT NULL COMMENT 'one more on every take',
    holder              VARCHAR(255)    NOT NULL COMMENT 'host:pid of the member that took it',
    taken_at            DATETIME(6)     NOT NULL,
    PRIMARY KEY (group_id, topic, partition_id)
);
