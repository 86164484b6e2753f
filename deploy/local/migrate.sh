#!/usr/bin/env bash
# Creates the app database and its users, then applies schemas/sql/*.sql in order, each once
# (recorded in schema_migrations), then the optional example migrations schemas/sql/examples/*.sql
# (recorded as examples/<file>; APPLY_EXAMPLE_SCHEMAS=0 skips them). Idempotent: run it as often
# as you like.
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

apply_once() {  # FILE VERSION: apply FILE unless VERSION is recorded in schema_migrations
  local f=$1 v=$2 done_already
  done_already=$(mysql_root -N -e "SELECT COUNT(*) FROM \`$db\`.schema_migrations WHERE version='$v'")
  [[ $done_already == 0 ]] || return 0
  mysql_root "$db" <"$f" || die "migration $v failed"
  mysql_root -e "INSERT INTO \`$db\`.schema_migrations (version) VALUES ('$v')"
  say "mariadb: applied $v"
}

for f in "$REPO_DIR"/schemas/sql/*.sql; do
  apply_once "$f" "$(basename "$f")"
done

# Example aggregate types: schemas/sql/examples/<type>.sql creates the tables of <type> (each
# `CREATE TABLE IF NOT EXISTS <table>` of the file is granted below).
example_tables=()
if [[ ${APPLY_EXAMPLE_SCHEMAS:-1} != 0 ]]; then
  for f in "$REPO_DIR"/schemas/sql/examples/*.sql; do
    [[ -e $f ]] || continue
    apply_once "$f" "examples/$(basename "$f")"
    mapfile -t -O "${#example_tables[@]}" example_tables \
      < <(sed -nE 's/^CREATE TABLE IF NOT EXISTS `?([A-Za-z0-9_]+)`?.*/\1/p' "$f")
  done
fi

# Users over TCP need passwords (root is unix_socket only on Debian).
mysql_root <<SQL
-- Debezium: reads the binlog and snapshots the outbox table.
CREATE USER IF NOT EXISTS '$DEBEZIUM_DB_USER'@'%' IDENTIFIED BY '$DEBEZIUM_DB_PASSWORD';
ALTER USER '$DEBEZIUM_DB_USER'@'%' IDENTIFIED BY '$DEBEZIUM_DB_PASSWORD';
GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '$DEBEZIUM_DB_USER'@'%';

-- The searchsync consumer, least privilege: read the truth, write its own state table, append
-- REBUILD events to the outbox (the repair job), record rebuild progress, delete old outbox
-- rows (outbox prune), and claim and mark outbox rows (searchsync relay, docs/relay.md).
CREATE USER IF NOT EXISTS '$SEARCHSYNC_DB_USER'@'%' IDENTIFIED BY '$SEARCHSYNC_DB_PASSWORD';
ALTER USER '$SEARCHSYNC_DB_USER'@'%' IDENTIFIED BY '$SEARCHSYNC_DB_PASSWORD';
GRANT SELECT ON \`$db\`.wiki_page TO '$SEARCHSYNC_DB_USER'@'%';
GRANT SELECT ON \`$db\`.search_revision_floor TO '$SEARCHSYNC_DB_USER'@'%';
GRANT SELECT, INSERT, DELETE ON \`$db\`.search_outbox TO '$SEARCHSYNC_DB_USER'@'%';
-- the relay's claim columns only: an event's payload, type and id stay as the application wrote them
GRANT UPDATE (status, attempts, available_at, locked_by, locked_at, last_error, updated_at)
  ON \`$db\`.search_outbox TO '$SEARCHSYNC_DB_USER'@'%';
GRANT SELECT, INSERT, UPDATE, DELETE ON \`$db\`.search_projection_state TO '$SEARCHSYNC_DB_USER'@'%';
-- searchsync dlq replay appends to its ledger (never changes or deletes a row).
GRANT SELECT, INSERT ON \`$db\`.search_dlq_replay TO '$SEARCHSYNC_DB_USER'@'%';
-- offsets reset --accept-gap records who accepted lost history (migration 007; append only).
GRANT SELECT, INSERT ON \`$db\`.search_offset_gap_ack TO '$SEARCHSYNC_DB_USER'@'%';
-- searchsync rebuild records its progress (no DELETE: finished rebuilds stay as history).
GRANT SELECT, INSERT, UPDATE ON \`$db\`.search_rebuild_state TO '$SEARCHSYNC_DB_USER'@'%';
-- The repair job: raise an orphan's revision floor (INSERT ... ON DUPLICATE KEY UPDATE, next to
-- its REBUILD append) and keep the wheel's state (migration 005).
GRANT SELECT, INSERT, UPDATE ON \`$db\`.search_revision_floor TO '$SEARCHSYNC_DB_USER'@'%';
GRANT SELECT, INSERT, UPDATE ON \`$db\`.search_repair_epoch TO '$SEARCHSYNC_DB_USER'@'%';
GRANT SELECT, INSERT, UPDATE ON \`$db\`.search_repair_bucket TO '$SEARCHSYNC_DB_USER'@'%';
-- searchsync exporter's freshness canary raises its heartbeat row (migration 006), which the
-- consumer reads like any truth table.
GRANT SELECT, INSERT, UPDATE ON \`$db\`.search_canary TO '$SEARCHSYNC_DB_USER'@'%';
-- The fan-out of related aggregates (migration 008): the consumer records jobs, its worker leases
-- them and moves their cursor (no DELETE: a finished job stays as the record of its last pass).
GRANT SELECT, INSERT, UPDATE ON \`$db\`.search_fanout TO '$SEARCHSYNC_DB_USER'@'%';

-- The application side (writer helper, loadgen, demo, tests): changes rows and appends outbox events.
CREATE USER IF NOT EXISTS '$APP_DB_USER'@'%' IDENTIFIED BY '$APP_DB_PASSWORD';
ALTER USER '$APP_DB_USER'@'%' IDENTIFIED BY '$APP_DB_PASSWORD';
GRANT SELECT, INSERT, UPDATE, DELETE ON \`$db\`.wiki_page TO '$APP_DB_USER'@'%';
GRANT SELECT, INSERT, UPDATE, DELETE ON \`$db\`.search_outbox TO '$APP_DB_USER'@'%';
GRANT SELECT, INSERT, UPDATE, DELETE ON \`$db\`.search_revision_floor TO '$APP_DB_USER'@'%';
GRANT SELECT, DELETE ON \`$db\`.search_projection_state TO '$APP_DB_USER'@'%';
SQL

# The example tables: read by the consumer, written by the application side, like wiki_page.
for t in "${example_tables[@]}"; do
  mysql_root <<SQL
GRANT SELECT ON \`$db\`.\`$t\` TO '$SEARCHSYNC_DB_USER'@'%';
GRANT SELECT, INSERT, UPDATE, DELETE ON \`$db\`.\`$t\` TO '$APP_DB_USER'@'%';
SQL
done
