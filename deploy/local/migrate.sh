#!/usr/bin/env bash
# Creates the app database and its users, then applies searchsync's own migrations
# schemas/sql/*.sql in order, each once (recorded in schema_migrations), the demo's business tables
# schemas/sql/demo/*.sql (recorded as demo/<file>), then the optional example migrations
# schemas/sql/examples/*.sql (recorded as examples/<file>; APPLY_EXAMPLE_SCHEMAS=0 skips them).
# The grants are `searchsync schema grants` (searchsync.mysql.schema), for the demo and example
# tables named like their files. Idempotent: run it as often as you like.
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

# The demo's business tables (wiki_page): <dir>/<table>.sql creates the table <table>; then the
# example aggregate types: each `CREATE TABLE IF NOT EXISTS <table>` of examples/<type>.sql.
business_tables=()
for f in "$REPO_DIR"/schemas/sql/demo/*.sql; do
  apply_once "$f" "demo/$(basename "$f")"
  business_tables+=("$(basename "$f" .sql)")
done
if [[ ${APPLY_EXAMPLE_SCHEMAS:-1} != 0 ]]; then
  for f in "$REPO_DIR"/schemas/sql/examples/*.sql; do
    [[ -e $f ]] || continue
    apply_once "$f" "examples/$(basename "$f")"
    mapfile -t -O "${#business_tables[@]}" business_tables \
      < <(sed -nE 's/^CREATE TABLE IF NOT EXISTS `?([A-Za-z0-9_]+)`?.*/\1/p' "$f")
  done
fi

# Users over TCP need passwords (root is unix_socket only on Debian).
mysql_root <<SQL
CREATE USER IF NOT EXISTS '$DEBEZIUM_DB_USER'@'%' IDENTIFIED BY '$DEBEZIUM_DB_PASSWORD';
ALTER USER '$DEBEZIUM_DB_USER'@'%' IDENTIFIED BY '$DEBEZIUM_DB_PASSWORD';
CREATE USER IF NOT EXISTS '$STACK_DB_USER'@'%' IDENTIFIED BY '$STACK_DB_PASSWORD';
ALTER USER '$STACK_DB_USER'@'%' IDENTIFIED BY '$STACK_DB_PASSWORD';
CREATE USER IF NOT EXISTS '$APP_DB_USER'@'%' IDENTIFIED BY '$APP_DB_PASSWORD';
ALTER USER '$APP_DB_USER'@'%' IDENTIFIED BY '$APP_DB_PASSWORD';
SQL

# Their grants: the consumer (least privilege), the application side, Debezium.
[[ -x $CLI_BIN ]] || die "the searchsync CLI is not at $CLI_BIN: run make venv (or set CLI_BIN to it)"
table_args=()
for t in "${business_tables[@]}"; do table_args+=(--table "$t"); done
grants=$("$CLI_BIN" schema grants --database "$db" --consumer-user "$STACK_DB_USER" \
  --app-user "$APP_DB_USER" --debezium-user "$DEBEZIUM_DB_USER" --host % "${table_args[@]}") ||
  die "searchsync schema grants failed"
mysql_root <<<"$grants" || die "applying the grants failed"
