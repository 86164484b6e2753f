#!/usr/bin/env bash
# MariaDB from Debian's mariadb-server, run without systemd, set up for Debezium (binlog, ROW, FULL).
# usage: mariadb.sh start|stop|status
set -euo pipefail
source "$(dirname "$0")/env.sh"
source "$(dirname "$0")/lib.sh"
name=mariadb
log="$LOG_DIR/mariadb.log"
cnf="$MYSQL_DIR/my.cnf"
err_log="$MYSQL_DIR/mariadb.log"  # written by the mysql user; $log links to it

write_cnf() {
  install -d -m 755 "$SVC_DIR" "$MYSQL_DIR"
  mkdir -p "$LOG_DIR" "$RUN_DIR"
  cat >"$cnf" <<CNF
[mariadbd]
datadir = $MYSQL_DATA_DIR
socket = $MYSQL_SOCKET
pid-file = $MYSQL_DIR/mariadbd.pid
port = $MYSQL_PORT
bind-address = 127.0.0.1
log-error = $err_log
# Debezium reads the binlog: it must be on, row-based, with full row images and a server id.
server-id = $MYSQL_SERVER_ID
log-bin = $MYSQL_DIR/binlog/mysql-bin
binlog_format = ROW
binlog_row_image = FULL
expire_logs_days = 2
character-set-server = utf8mb4
collation-server = utf8mb4_bin
innodb_buffer_pool_size = 256M
max_connections = 300
skip-name-resolve
CNF
}

start() {
  if pid_alive $name; then  # already running: only confirm it still answers
    wait_until "$READY_TIMEOUT" "MariaDB" $name "$log" mysql_root -e 'select 1'
    return
  fi
  command -v mariadbd >/dev/null || die "mariadbd not found: run deploy/install.sh (as root), or apt-get install mariadb-server"
  write_cnf
  mkdir -p "$MYSQL_DATA_DIR" "$MYSQL_DIR/binlog"
  chown -R mysql:mysql "$MYSQL_DIR"
  runuser -u mysql -- test -w "$MYSQL_DATA_DIR" \
    || die "the mysql user cannot reach $MYSQL_DATA_DIR: set SVC_DIR to a directory every user can traverse"
  if [[ ! -d $MYSQL_DATA_DIR/mysql ]]; then
    mariadb-install-db --defaults-file="$cnf" --user=mysql --auth-root-authentication-method=socket \
      --skip-test-db >"$LOG_DIR/mariadb-install.log" 2>&1 \
      || { tail -n 30 "$LOG_DIR/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
  fi
  touch "$err_log"; chown mysql:mysql "$err_log"; ln -sfn "$err_log" "$log"
  nohup mariadbd --defaults-file="$cnf" --user=mysql >>"$log" 2>&1 &
  echo $! >"$RUN_DIR/$name.pid"
  wait_until "$READY_TIMEOUT" "MariaDB" $name "$log" mysql_root -e 'select 1'
}

case "${1:-}" in
  start) start ;;
  stop) stop_pid $name ;;
  status) status_line $name "$MYSQL_HOST:$MYSQL_PORT" "$log" ;;
  *) die "usage: $0 start|stop|status" ;;
esac
