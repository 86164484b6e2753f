-- The demo's business table, wiki_page (docs/design.md, "The wiki_page document"; consumer/searchsync/projection/wiki_page.py).
-- Not part of searchsync's own schema: deploy/local/migrate.sh applies schemas/sql/demo/*.sql on the
-- local stack (tracked in schema_migrations as demo/<file>) and grants the consumer user SELECT and
-- the application user write access on the table named like the file (`searchsync schema grants
-- --table wiki_page`).
--
-- `revision` rises by exactly one on every change
-- (create = 1, update, soft delete, restore): see consumer/searchsync/writer/.
-- `relations_json` is a JSON object keyed by relation type, each key a list of entities:
--   {"RELATED_CHARACTER": [{"entity_id": "character_xxx", "entity_type": "character", "title": "齐夏"}]}
-- (docs/design.md, "The wiki_page document"; anything else is a PROJECTION_ERROR dead letter).
CREATE TABLE IF NOT EXISTS wiki_page (
    id              VARCHAR(64)     NOT NULL,
    title           VARCHAR(512)    NOT NULL,
    content         MEDIUMTEXT      NOT NULL,
    relations_json  JSON            NOT NULL,
    revision        BIGINT UNSIGNED NOT NULL,
    deleted_at      DATETIME(6)     NULL,
    updated_at      DATETIME(6)     NOT NULL,
    PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
