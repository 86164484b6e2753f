#!/usr/bin/env bash
# Kafka Connect (distributed mode) with Debezium's MariaDB connector; registers the connector of
# `searchsync schema connector`, its credentials read by the worker's FileConfigProvider from
# $STACK_DIR/connect/debezium.properties (never in the connector's config).
# usage: connect.sh start|worker|stop|status|register   (worker: start the worker only, register nothing)
set -euo pipefail
source "$(dirname "$0")/env.sh"
source "$(dirname "$0")/lib.sh"
name=connect
log="$LOG_DIR/connect.log"
props="$STACK_DIR/connect/worker.properties"
secrets="$STACK_DIR/connect/debezium.properties"
url="http://127.0.0.1:$CONNECT_PORT"

# The worker's properties on stdout: the stack's settings and the config provider the connector's
# credentials need.
worker_props() {
  cat <<PROPS
bootstrap.servers=127.0.0.1:$KAFKA_PORT
group.id=$CONNECT_GROUP_ID
listeners=http://127.0.0.1:$CONNECT_PORT
rest.advertised.host.name=127.0.0.1
rest.advertised.port=$CONNECT_PORT
plugin.path=$DIST_DIR/connect-plugins
config.storage.topic=$CONNECT_GROUP_ID-configs
offset.storage.topic=$CONNECT_GROUP_ID-offsets
status.storage.topic=$CONNECT_GROUP_ID-status
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
offset.flush.interval.ms=1000
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
value.converter.schemas.enable=false
PROPS
  "$CLI_BIN" schema connector --worker-properties --provider file
}

write_props() {
  mkdir -p "$STACK_DIR/connect" "$LOG_DIR" "$RUN_DIR"
  worker_props >"$props"
}

# The worker started from other properties (an older checkout's, without the config provider)
# cannot resolve the connector's credentials: stop it so `start` brings it back with these.
props_current() { [[ -f $props ]] && [[ $(worker_props) == "$(cat "$props")" ]]; }

restart_if_stale() {
  pid_alive $name || return 0
  props_current && return 0
  say "connect: the worker's properties changed ($props): restarting it"
  stop_pid $name
}

rest_up() { curl -sf "$url/connectors" >/dev/null; }

connector_running() {
  local s
  s=$(curl -sf "$url/connectors/$CONNECTOR_NAME/status") || return 1
  python3 - "$s" <<'PY'
import json, sys
s = json.loads(sys.argv[1])
ok = s["connector"]["state"] == "RUNNING" and s["tasks"] and all(t["state"] == "RUNNING" for t in s["tasks"])
failed = [t.get("trace", "")[:2000] for t in s["tasks"] if t["state"] == "FAILED"]
if failed:
    print("connector task FAILED:\n" + failed[0], file=sys.stderr)
    sys.exit(2)
sys.exit(0 if ok else 1)
PY
}

# PUT the connector's config: creates it or updates it in place (idempotent).
register() {
  [[ -x $CLI_BIN ]] || die "the searchsync CLI is not at $CLI_BIN: run make venv (or set CLI_BIN to it)"
  (umask 077 && printf 'user=%s\npassword=%s\n' "$DEBEZIUM_DB_USER" "$DEBEZIUM_DB_PASSWORD" >"$secrets")
  local body code
  body=$("$CLI_BIN" schema connector --mysql-host "$MYSQL_HOST" --mysql-port "$MYSQL_PORT" \
    --database "$MYSQL_DATABASE" --server-id "$DEBEZIUM_SERVER_ID" --topic-prefix "$DEBEZIUM_TOPIC_PREFIX" \
    --schema-history-topic "$DEBEZIUM_SCHEMA_HISTORY_TOPIC" --kafka-bootstrap "127.0.0.1:$KAFKA_PORT" \
    --provider file --secrets "$secrets") || die "searchsync schema connector failed"
  code=$(curl -s -o "$STACK_DIR/connect/put.out" -w '%{http_code}' -X PUT -H 'Content-Type: application/json' \
    --data "$body" "$url/connectors/$CONNECTOR_NAME/config")
  [[ $code == 200 || $code == 201 ]] || { cat "$STACK_DIR/connect/put.out" >&2; die "registering $CONNECTOR_NAME failed (HTTP $code)"; }
}

wait_connector() {
  local deadline=$((SECONDS + READY_TIMEOUT)) rc
  while true; do
    rc=0; connector_running || rc=$?
    [[ $rc == 0 ]] && return 0
    if [[ $rc == 2 ]] || ((SECONDS >= deadline)); then
      warn "connector $CONNECTOR_NAME is not RUNNING; last lines of $log:"
      tail -n 40 "$log" >&2
      return 1
    fi
    sleep 1
  done
}

start_worker() {
  restart_if_stale
  if ! pid_alive $name; then
    [[ -d $DIST_DIR/connect-plugins ]] || die "Connect plugins missing: run deploy/local/fetch.sh"
    write_props
    nohup "$JAVA_BIN" -Xms256m -Xmx"$CONNECT_HEAP" -XX:+UseG1GC -Djava.awt.headless=true \
      -Dsearchsync.log.file="$log" -Dlog4j2.configurationFile="$REPO_DIR/deploy/local/conf/log4j2-kafka.yaml" \
      -cp "$DIST_DIR/kafka-libs/*" org.apache.kafka.connect.cli.ConnectDistributed "$props" \
      >"$LOG_DIR/connect.out" 2>&1 &
    echo $! >"$RUN_DIR/$name.pid"
    wait_until "$READY_TIMEOUT" "Kafka Connect REST" $name "$log" rest_up
  fi
}

start() {
  start_worker
  register
  wait_connector
}

case "${1:-}" in
  start) start ;;
  worker) start_worker ;;
  stop) stop_pid $name ;;
  register)
    props_current || die "the running worker lacks the config provider: run $0 start (it restarts the worker)"
    register && wait_connector ;;
  status)
    status_line $name "$url" "$log"
    if rest_up; then printf '  connector %s: %s\n' "$CONNECTOR_NAME" \
      "$(curl -s "$url/connectors/$CONNECTOR_NAME/status" | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s.get("connector",{}).get("state","absent"), [t["state"] for t in s.get("tasks",[])])' 2>/dev/null || echo absent)"; fi ;;
  *) die "usage: $0 start|worker|stop|status|register" ;;
esac
