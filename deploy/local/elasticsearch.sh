#!/usr/bin/env bash
# One Elasticsearch node from Elastic's integ-test-zip (no x-pack, no security), loopback only.
# Elasticsearch refuses to run as root, so it runs as the unprivileged user $ES_USER.
# usage: elasticsearch.sh start|stop|status
set -euo pipefail
source "$(dirname "$0")/env.sh"
source "$(dirname "$0")/lib.sh"
name=elasticsearch
es_dist=$(ls -d "$DIST_DIR"/elasticsearch-* 2>/dev/null | head -n 1 || true)
conf="$ES_DIR/config"
log="$ES_DIR/logs/searchsync-local.log"   # <cluster.name>.log
url="http://127.0.0.1:$ES_PORT"

# Ready: cluster health yellow or green, and the product header the Python client checks.
ready() {
  local h
  h=$(curl -s -D - -o "$ES_DIR/health.json" \
    "$url/_cluster/health?wait_for_status=yellow&timeout=1s") || return 1
  grep -qi '^X-Elastic-Product: Elasticsearch' <<<"$h" || return 1
  grep -Eq '"status":"(yellow|green)"' "$ES_DIR/health.json"
}

start() {
  if pid_alive $name; then  # already running: only confirm it still answers
    wait_until "$READY_TIMEOUT" "Elasticsearch" $name "$log" ready
    return
  fi
  [[ -n $es_dist && -x $es_dist/bin/elasticsearch ]] || die "Elasticsearch missing: run deploy/local/fetch.sh"
  [[ -n $ES_JAVA_HOME && -x $ES_JAVA_HOME/bin/java ]] \
    || die "Elasticsearch 9 needs Java 21+: set ES_JAVA_HOME (none found under /usr/lib/jvm)"
  local es_home
  es_home=$(node_home "$ES_USER" "$es_dist" "$ES_DIR" "$ES_DATA_DIR" elasticsearch)
  cat >"$conf/elasticsearch.yml" <<YML
cluster.name: searchsync-local
node.name: searchsync-1
path.data: $ES_DATA_DIR
path.logs: $ES_DIR/logs
network.host: 127.0.0.1
http.port: $ES_PORT
transport.port: $ES_TRANSPORT_PORT
discovery.type: single-node
action.destructive_requires_name: false
# a local development node on loopback: no TLS, no users (this distribution ships security on)
xpack.security.enabled: false
xpack.ml.enabled: false
# this node is for development and tests: keep the disk watermarks from blocking writes on a busy disk
cluster.routing.allocation.disk.threshold_enabled: false
YML
  node_run $name Elasticsearch "$ES_USER" "$ES_DIR" "$ES_DATA_DIR" "$es_home" elasticsearch "$log" ready \
    ES_JAVA_HOME="$ES_JAVA_HOME" ES_PATH_CONF="$conf" ES_TMPDIR="$ES_DIR/tmp" \
    ES_JAVA_OPTS="-Xms$ES_HEAP -Xmx$ES_HEAP"
}

case "${1:-}" in
  start) start ;;
  stop) stop_pid $name ;;
  status) status_line $name "$url" "$log" ;;
  *) die "usage: $0 start|stop|status" ;;
esac
