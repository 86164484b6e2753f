#!/usr/bin/env bash
# Creates the app database and its users, then applies schemas/sql/*.sql in order, each once
# (recorded in schema_migrations). Idempotent: run it as often as you like.
set -euo pipefail
source "$(dirname "$0")/env.sh"
source "$(dirname "$0")/lib.sh"

db=$MYSQL_DATABASE
mysql_root <<SQL
CREATE DATABASE IF NOT EXISTS \`$db\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE TABLE IF NOT EXISTS \`$db\`.schema_migrations (
  version VARCHAR(128) NOT NULL PRIMARY KEY,
  applied_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
);
SQL

for f in "$REPO_DIR"/schemas/sql/*.sql; do
  v=$(basename "$f")
  done_already=$(mysql_root -N -e "SELECT COUNT(*) FROM \`$db\`.schema_migrations WHERE version='$v'")
  [[ $done_already == 0 ]] || continue
  mysql_root "$db" <"$f" || die "migration $v failed"
  mysql_root -e "INSERT INTO \`$db\`.schema_migrations (version) VALUES ('$v')"
  say "mariadb: applied $v"
done

# Users over TCP need passwords (root is unix_socket only on Debian).
mysql_root <<SQL
-- Debezium: reads the binlog and snapshots the outbox table.
CREATE USER IF NOT EXISTS '$DEBEZIUM_DB_USER'@'%' IDENTIFIED BY '$DEBEZIUM_DB_PASSWORD';
ALTER USER '$DEBEZIUM_DB_USER'@'%' IDENTIFIED BY '$DEBEZIUM_DB_PASSWORD';
GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '$DEBEZIUM_DB_USER'@'%';

-- The searchsync consumer, least privilege: read the truth, write its own state table, and append
-- REBUILD events to the outbox (the repair job).
CREATE USER IF NOT EXISTS '$SEARCHSYNC_DB_USER'@'%' IDENTIFIED BY '$SEARCHSYNC_DB_PASSWORD';
ALTER USER '$SEARCHSYNC_DB_USER'@'%' IDENTIFIED BY '$SEARCHSYNC_DB_PASSWORD';
GRANT SELECT ON \`$db\`.wiki_page TO '$SEARCHSYNC_DB_USER'@'%';
GRANT SELECT ON \`$db\`.search_revision_floor TO '$SEARCHSYNC_DB_USER'@'%';
GRANT SELECT, INSERT ON \`$db\`.search_outbox TO '$SEARCHSYNC_DB_USER'@'%';
GRANT SELECT, INSERT, UPDATE, DELETE ON \`$db\`.search_projection_state TO '$SEARCHSYNC_DB_USER'@'%';

-- The application side (writer helper, loadgen, demo, tests): changes rows and appends outbox events.
CREATE USER IF NOT EXISTS '$APP_DB_USER'@'%' IDENTIFIED BY '$APP_DB_PASSWORD';
ALTER USER '$APP_DB_USER'@'%' IDENTIFIED BY '$APP_DB_PASSWORD';
GRANT SELECT, INSERT, UPDATE, DELETE ON \`$db\`.wiki_page TO '$APP_DB_USER'@'%';
GRANT SELECT, INSERT, UPDATE, DELETE ON \`$db\`.search_outbox TO '$APP_DB_USER'@'%';
GRANT SELECT, INSERT, UPDATE, DELETE ON \`$db\`.search_revision_floor TO '$APP_DB_USER'@'%';
GRANT SELECT, DELETE ON \`$db\`.search_projection_state TO '$APP_DB_USER'@'%';
SQL
