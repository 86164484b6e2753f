-- The lineage a consumer group reads (invariant 14): the Kafka topic id each subscribed topic had
-- when the group first read it. A topic deleted and re-created gets a new id (and Kafka drops the
-- group's committed offsets with the old topic), so a member that finds another id blocks the
-- topic's partitions until `searchsync offsets reset --accept-gap --execute` adopts the new id and
-- records who accepted it and when.
CREATE TABLE IF NOT EXISTS search_topic_lineage (
    group_id            VARCHAR(255)    NOT NULL,
    topic               VARCHAR(249)    NOT NULL,
    topic_id            VARCHAR(64)     NOT NULL COMMENT 'Kafka topic id (base64 UUID)',
    recorded_at         DATETIME(6)     NOT NULL,
    replaced_topic_id   VARCHAR(64)     NULL COMMENT 'the id before an accepted lineage change',
    accepted_by         VARCHAR(255)    NULL COMMENT 'who accepted the change (user@host)',
    PRIMARY KEY (group_id, topic)
);
