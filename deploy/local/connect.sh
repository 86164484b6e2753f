#!/usr/bin/env bash
# Kafka Connect (distributed mode) with Debezium's MariaDB connector, from the repository's connect/
# folder: the worker's properties connect/worker.properties, the connector connect/outbox-mariadb.json
# (what `searchsync schema connector --flavor mariadb` prints), each ${NAME} filled in from env.sh.
# Its credentials are read by the worker's FileConfigProvider from
# $STACK_DIR/connect/debezium.properties (never in the connector's config).
# usage: connect.sh start|worker|stop|status|register|config
#   (worker: start the worker only, register nothing; config: print the connector's config, change nothing)
set -euo pipefail
source "$(dirname "$0")/env.sh"
source "$(dirname "$0")/lib.sh"
name=connect
log="$LOG_DIR/connect.log"
props="$STACK_DIR/connect/worker.properties"
secrets="$STACK_DIR/connect/debezium.properties"
url="http://127.0.0.1:$CONNECT_PORT"

connect_dir="$REPO_DIR/connect"

# FILE NAME=VALUE...: FILE with each ${NAME} given replaced by its VALUE (JSON-escaped in a .json
# file); other ${...} stay (the connector's own placeholders). Comment and blank lines of a
# .properties file are left out.
render() {
  python3 - "$@" <<'PY'
import json, re, sys
path, pairs = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
text = open(path, encoding="utf-8").read()
is_json = path.endswith(".json")
def value(m):
    if m[1] not in pairs:
        return m[0]
    return json.dumps(pairs[m[1]])[1:-1] if is_json else pairs[m[1]]
text = re.sub(r"\$\{([A-Z][A-Z0-9_]*)\}", value, text)
if not is_json:
    text = "".join(l + "\n" for l in text.splitlines() if l.strip() and not l.lstrip().startswith("#"))
sys.stdout.write(text)
PY
}

# The worker's properties on stdout: connect/worker.properties with the stack's settings.
worker_props() {
  render "$connect_dir/worker.properties" KAFKA_PORT="$KAFKA_PORT" CONNECT_GROUP_ID="$CONNECT_GROUP_ID" \
    CONNECT_PORT="$CONNECT_PORT" DIST_DIR="$DIST_DIR"
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

# The connector's config on stdout: connect/outbox-mariadb.json's "config", filled in.
connector_config() {
  render "$connect_dir/outbox-mariadb.json" CONNECTOR_NAME="$CONNECTOR_NAME" MYSQL_HOST="$MYSQL_HOST" \
    MYSQL_PORT="$MYSQL_PORT" MYSQL_DATABASE="$MYSQL_DATABASE" DEBEZIUM_SERVER_ID="$DEBEZIUM_SERVER_ID" \
    DEBEZIUM_TOPIC_PREFIX="$DEBEZIUM_TOPIC_PREFIX" DEBEZIUM_SCHEMA_HISTORY_TOPIC="$DEBEZIUM_SCHEMA_HISTORY_TOPIC" \
    KAFKA_BOOTSTRAP="127.0.0.1:$KAFKA_PORT" DEBEZIUM_SECRETS_FILE="$secrets" |
    python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["config"], indent=2))'
}

# PUT the connector's config: creates it or updates it in place (idempotent).
register() {
  (umask 077 && printf 'user=%s\npassword=%s\n' "$DEBEZIUM_DB_USER" "$DEBEZIUM_DB_PASSWORD" >"$secrets")
  local body code
  body=$(connector_config) || die "rendering $connect_dir/outbox-mariadb.json failed"
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
  config) connector_config ;;
  register)
    props_current || die "the running worker lacks the config provider: run $0 start (it restarts the worker)"
    register && wait_connector ;;
  status)
    status_line $name "$url" "$log"
    if rest_up; then printf '  connector %s: %s\n' "$CONNECTOR_NAME" \
      "$(curl -s "$url/connectors/$CONNECTOR_NAME/status" | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s.get("connector",{}).get("state","absent"), [t["state"] for t in s.get("tasks",[])])' 2>/dev/null || echo absent)"; fi ;;
  *) die "usage: $0 start|worker|stop|status|register|config" ;;
esac
