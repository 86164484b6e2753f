#!/usr/bin/env bash
# The local stack: MariaDB, Kafka (KRaft), Kafka Connect + Debezium, Elasticsearch.
# usage: [RELAY=polling] [SEARCH_ENGINE=opensearch] [WITH_OPENSEARCH=1] stack.sh up|down|status
#   up      fetch jars (once), start what is not running, wait for real readiness, apply migrations,
#           register the connector. Idempotent: a second call finds everything running.
#           RELAY=polling: no Kafka Connect (`searchsync relay run` publishes the outbox, docs/relay.md).
#           SEARCH_ENGINE=opensearch: OpenSearch in place of Elasticsearch, on the same port.
#           WITH_OPENSEARCH=1: OpenSearch beside Elasticsearch, on $OS_PORT (9201; `make test`).
#   down    stop what these scripts started, by pid.
#   apps-down  stop only what `make demo` left running (its consumer, exporter, relay).
#   status  one line per service.
#   clean   down, then remove all state ($STACK_DIR and, when it lives elsewhere, $SVC_DIR).
set -euo pipefail
umask 022  # the service users must be able to read what these scripts create
here=$(cd "$(dirname "$0")" && pwd)
source "$here/env.sh"
source "$here/lib.sh"

# The search engine(s) on $ES_PORT. With WITH_OPENSEARCH=1, OpenSearch boots on $OS_PORT in the
# background meanwhile (while Connect starts); `search_wait` waits for it.
os_start=""
search_up() {
  case $SEARCH_ENGINE in
    elasticsearch)
      bash "$here/elasticsearch.sh" start
      if [[ ${WITH_OPENSEARCH:-0} == 1 ]]; then
        bash "$here/opensearch.sh" start >"$LOG_DIR/opensearch.start" 2>&1 &
        os_start=$!
        # should `up` fail meanwhile, let the boot finish (and write its pid) so `down` stops it
        trap 'wait "$os_start" 2>/dev/null || true' EXIT
      fi
      ;;
    opensearch)
      pid_alive elasticsearch && die "Elasticsearch runs on :$ES_PORT: run \`make down\` before SEARCH_ENGINE=opensearch make up"
      bash "$here/opensearch.sh" start
      ;;
    *) die "SEARCH_ENGINE must be elasticsearch or opensearch, not '$SEARCH_ENGINE'" ;;
  esac
}

search_wait() {
  [[ -n $os_start ]] || return 0
  wait "$os_start" || { cat "$LOG_DIR/opensearch.start" >&2; die "OpenSearch did not start"; }
}

up() {
  local t0=$SECONDS
  mkdir -p "$LOG_DIR" "$RUN_DIR"
  bash "$here/fetch.sh"
  bash "$here/mariadb.sh" start
  bash "$here/migrate.sh"
  bash "$here/kafka.sh" start
  # the search engine takes longest to boot: start it before waiting on Connect's connector.
  if [[ $SEARCH_ENGINE == elasticsearch ]] && pid_alive opensearch && [[ $OS_PORT == "$ES_PORT" ]]; then
    die "OpenSearch runs on :$ES_PORT: run \`make down\` before starting Elasticsearch"
  fi
  search_up
  if [[ ${RELAY:-debezium} == polling ]]; then
    pid_alive connect && say "Kafka Connect is running too: its connector and a relay both publish every row (harmless duplicates)"
  else
    bash "$here/connect.sh" start
  fi
  search_wait
  say ""
  say "searchsync local stack is up ($((SECONDS - t0)) s):"
  say "  MariaDB        $MYSQL_HOST:$MYSQL_PORT  db=$MYSQL_DATABASE  users: $STACK_DB_USER (consumer), $APP_DB_USER (application)   log $LOG_DIR/mariadb.log"
  say "  Kafka          127.0.0.1:$KAFKA_PORT (KRaft, controller :$KAFKA_CONTROLLER_PORT)   log $LOG_DIR/kafka.log"
  if [[ ${RELAY:-debezium} == polling ]]; then
    say "  Kafka Connect  not started (RELAY=polling: searchsync relay publishes the outbox)"
  else
    say "  Kafka Connect  http://127.0.0.1:$CONNECT_PORT  connector $CONNECTOR_NAME RUNNING   log $LOG_DIR/connect.log"
  fi
  if [[ $SEARCH_ENGINE == opensearch ]]; then
    say "  OpenSearch     http://127.0.0.1:$ES_PORT   log $LOG_DIR/opensearch.log   (SEARCHSYNC_SEARCH_ENGINE=opensearch)"
  else
    say "  Elasticsearch  http://127.0.0.1:$ES_PORT   log $LOG_DIR/elasticsearch.log"
    pid_alive opensearch && say "  OpenSearch     http://127.0.0.1:$OS_PORT   log $LOG_DIR/opensearch.log"
  fi
  say "  state          $STACK_DIR"
  [[ $SVC_DIR == "$STACK_DIR" ]] || say "  service state  $SVC_DIR (the clone's directory is closed to the service users)"
}

# What `make demo` leaves running beside the services: its consumer, exporter and relay. `make test`
# stops them first, so the tests never share topics, rows or the canary with a demo's consumer.
apps_down() {
  local app
  # the consumer `make demo` started, its exporter (the freshness canary), the relay of
  # `RELAY=polling make demo`: each one that has a pid file
  for app in searchsync searchsync-exporter relay; do
    [[ -f $RUN_DIR/$app.pid ]] && stop_pid "$app"
  done
  return 0
}

down() {
  apps_down
  bash "$here/connect.sh" stop
  bash "$here/elasticsearch.sh" stop
  [[ -f $RUN_DIR/opensearch.pid ]] && bash "$here/opensearch.sh" stop
  bash "$here/kafka.sh" stop
  bash "$here/mariadb.sh" stop
}

status() {
  [[ -f $RUN_DIR/searchsync.pid ]] && status_line searchsync "http://127.0.0.1:9464/metrics" "$LOG_DIR/searchsync.log"
  [[ -f $RUN_DIR/searchsync-exporter.pid ]] && status_line searchsync-exporter "http://127.0.0.1:9470/metrics" "$LOG_DIR/searchsync-exporter.log"
  [[ -f $RUN_DIR/relay.pid ]] && status_line relay "http://127.0.0.1:9465/metrics" "$LOG_DIR/relay.log"
  bash "$here/mariadb.sh" status
  bash "$here/kafka.sh" status
  bash "$here/connect.sh" status
  bash "$here/elasticsearch.sh" status
  [[ -f $RUN_DIR/opensearch.pid ]] && bash "$here/opensearch.sh" status
  return 0
}

clean() {
  down
  rm -rf "$STACK_DIR"
  say "removed $STACK_DIR"
  if [[ $SVC_DIR != "$STACK_DIR" ]]; then rm -rf "$SVC_DIR" && say "removed $SVC_DIR"; fi
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  apps-down) apps_down ;;
  status) status ;;
  clean) clean ;;
  *) die "usage: $0 up|down|apps-down|status|clean" ;;
esac
