-- OPTIONAL example migration: the table of the example aggregate type `article`
-- (consumer/searchsync/examples/article.py). deploy/local/migrate.sh applies schemas/sql/examples/*.sql on
-- the local stack (tracked in schema_migrations as examples/<file>) and grants the consumer user
-- SELECT and the application user write access on the table named like the file. Your own
-- database needs it only if you enable the example (`[projection] modules`).
--
-- Like wiki_page: `revision` rises by exactly one on every change, in the same transaction as
-- the outbox row (aggregate_type = 'article'); a soft delete sets deleted_at.
CREATE TABLE IF NOT EXISTS article (
    id              VARCHAR(64)     NOT NULL,
    title           VARCHAR(512)    NOT NULL,
    body            MEDIUMTEXT      NOT NULL,
    tags_json       JSON            NOT NULL,
    revision        BIGINT UNSIGNED NOT NULL,
    deleted_at      DATETIME(6)     NULL,
    updated_at      DATETIME(6)     NOT NULL,
    PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
