-- OPTIONAL example migration: the tables of the example aggregate type `product`
-- (consumer/searchsync/examples/shop.py), a shop's catalogue as a team's own schema has it: an
-- integer AUTO_INCREMENT key and real column types (DECIMAL, DATE, JSON, DATETIME(6)).
-- deploy/local/migrate.sh applies schemas/sql/examples/*.sql on the local stack (tracked in
-- schema_migrations as examples/<file>) and grants the consumer user SELECT and the application
-- user write access on every table the file creates.
--
-- The application writes it with plain SQL (docs/consumer.md, "Column types"): every change of
-- a product or of its images is one transaction that changes the rows, sets
-- `revision = revision + 1` and inserts the product's outbox row (aggregate_type 'product',
-- aggregate_id the id's text); a soft delete sets deleted_at; a hard delete records the
-- revision floor in search_revision_floor.
--
-- product_image's primary key starts with product_id: the truth reads a product's images with
-- `WHERE product_id IN (...)` (the child's `key`).
CREATE TABLE IF NOT EXISTS product (
    id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    sku             VARCHAR(64)     NOT NULL,
    name            VARCHAR(512)    NOT NULL,
    price           DECIMAL(10,2)   NOT NULL,
    stock           INT             NOT NULL DEFAULT 0,
    released_on     DATE            NULL,
    attrs           JSON            NULL,
    revision        BIGINT UNSIGNED NOT NULL DEFAULT 1,
    deleted_at      DATETIME(6)     NULL,
    updated_at      DATETIME(6)     NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY product_sku (sku)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- A product's images: children of the product aggregate, in `position` order. A change of them
-- bumps the product's revision and inserts its outbox row, in the same transaction.
CREATE TABLE IF NOT EXISTS product_image (
    product_id      BIGINT UNSIGNED NOT NULL,
    position        INT UNSIGNED    NOT NULL,
    url             VARCHAR(1024)   NOT NULL,
    alt             VARCHAR(512)    NULL,
    PRIMARY KEY (product_id, position)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
