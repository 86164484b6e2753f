-- OPTIONAL (not applied by deploy/local/migrate.sh): makes one repair-wheel bucket of wiki_page
-- cheap on the MySQL side (docs/design.md, "Repair").
--
-- Without it the repair job selects a key range (a span of adjacent buckets) with
--   WHERE CRC32(CONCAT('wiki_page:', id)) >= lo AND CRC32(CONCAT('wiki_page:', id)) < hi
-- over a keyset scan of the primary key: correct, but each range read passes over every row, so
-- one rotation of M buckets reads the table about M / span_buckets times (the wheel reads up to
-- 32 buckets per span). With this stored generated column and index, a range reads only its
-- own rows, through (sync_hash, id): the recommended setup for large tables.
--
-- The expression must be exactly the one searchsync writes into every document's sync_hash
-- (searchsync.projection.sync_hash: CRC32 of the UTF-8 of "<aggregate_type>:<id>"; the table is
-- utf8mb4, so CONCAT yields those bytes). CRC32 returns an unsigned 32-bit value.
--
-- Apply by hand as an administrator (a table rebuild: plan it for a quiet hour on large
-- tables), e.g. on the local stack
--   mariadb --socket=.stack/mariadb/mysqld.sock -uroot searchsync < schemas/sql/optional/sync_bucket.sql
-- then set
--   [repair] mysql_sync_hash_column = true   (or SEARCHSYNC_REPAIR_MYSQL_SYNC_HASH_COLUMN=true)
-- No grant changes: the searchsync user's SELECT on the table covers the new column.
-- bench/repair_bench.py --sync-hash-column applies this file's statement to a scratch copy.
-- For another aggregate type, copy it with that type's table and name.
ALTER TABLE wiki_page
    ADD COLUMN sync_hash INT UNSIGNED
        GENERATED ALWAYS AS (CRC32(CONCAT('wiki_page:', id))) STORED,
    ADD INDEX idx_wiki_page_sync_hash_id (sync_hash, id);
