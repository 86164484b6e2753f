-- OPTIONAL example migration: the tables of the example aggregate type `article`
-- (consumer/searchsync/examples/article.py) and of the aggregate type `author` it references.
-- deploy/local/migrate.sh applies schemas/sql/examples/*.sql on the local stack (tracked in
-- schema_migrations as examples/<file>) and grants the consumer user SELECT and the application
-- user write access on every table the file creates. Your own database needs it only if you
-- enable the example (`[projection] modules`).
--
-- Like wiki_page: `revision` rises by exactly one on every change, in the same transaction as
-- the outbox row (aggregate_type = 'article', or 'author'); a soft delete sets deleted_at.
--
-- The indexes the projector's declarations need (docs/consumer.md, "Children and lookups"):
-- - article_tag's primary key starts with article_id: the truth reads an article's tags with
--   `WHERE article_id IN (...)` (the child's `key`);
-- - article (author_id, id): "which articles show author X" is one index range (the lookup's
--   `via`), for the fan-out of an author's change.
CREATE TABLE IF NOT EXISTS author (
    id              VARCHAR(64)     NOT NULL,
    name            VARCHAR(512)    NOT NULL,
    revision        BIGINT UNSIGNED NOT NULL,
    deleted_at      DATETIME(6)     NULL,
    updated_at      DATETIME(6)     NOT NULL,
    PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS article (
    id              VARCHAR(64)     NOT NULL,
    title           VARCHAR(512)    NOT NULL,
    body            MEDIUMTEXT      NOT NULL,
    author_id       VARCHAR(64)     NULL,
    revision        BIGINT UNSIGNED NOT NULL,
    deleted_at      DATETIME(6)     NULL,
    updated_at      DATETIME(6)     NOT NULL,
    PRIMARY KEY (id),
    KEY article_author (author_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- An article created by the first version of this file (tags in a JSON column): the same shape.
-- Its tags_json is dropped, not copied: a rebuild or repair re-projects from article_tag.
ALTER TABLE article
    ADD COLUMN IF NOT EXISTS author_id VARCHAR(64) NULL AFTER body,
    ADD KEY IF NOT EXISTS article_author (author_id, id),
    DROP COLUMN IF EXISTS tags_json;

-- An article's tags: children of the article aggregate. A change of them bumps the article's
-- revision and appends its outbox event, in the same transaction.
CREATE TABLE IF NOT EXISTS article_tag (
    article_id      VARCHAR(64)     NOT NULL,
    position        INT UNSIGNED    NOT NULL,
    tag             VARCHAR(255)    NOT NULL,
    PRIMARY KEY (article_id, tag)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
