#!/usr/bin/env bash
# One OpenSearch node from the integ-test-zip (no security plugin), loopback only, on $OS_PORT:
# `SEARCH_ENGINE=opensearch make up` runs it in place of Elasticsearch (on $ES_PORT); `make test`
# runs it beside Elasticsearch (WITH_OPENSEARCH=1, on 9201) for the search contract suite.
# OpenSearch refuses to run as root, so it runs as the unprivileged user $OS_USER.
# usage: opensearch.sh start|stop|status
set -euo pipefail
source "$(dirname "$0")/env.sh"
source "$(dirname "$0")/lib.sh"
name=opensearch
os_dist=$(ls -d "$DIST_DIR"/opensearch-* 2>/dev/null | head -n 1 || true)
conf="$OS_DIR/config"
log="$OS_DIR/logs/searchsync-local.log"   # <cluster.name>.log
url="http://127.0.0.1:$OS_PORT"

# Ready: cluster health yellow or green from OpenSearch (not another engine on the port).
ready() {
  curl -s "$url/" | grep -q '"distribution" *: *"opensearch"' || return 1
  curl -s -o "$OS_DIR/health.json" "$url/_cluster/health?wait_for_status=yellow&timeout=1s" || return 1
  grep -Eq '"status":"(yellow|green)"' "$OS_DIR/health.json"
}

start() {
  if pid_alive $name; then  # already running: only confirm it still answers
    wait_until "$READY_TIMEOUT" "OpenSearch" $name "$log" ready
    return
  fi
  [[ -n $os_dist && -x $os_dist/bin/opensearch ]] || die "OpenSearch missing: run deploy/local/fetch.sh"
  [[ -n $OS_JAVA_HOME && -x $OS_JAVA_HOME/bin/java ]] \
    || die "OpenSearch 2 needs Java 17..21: set OS_JAVA_HOME (none found under /usr/lib/jvm)"
  local os_home
  os_home=$(node_home "$OS_USER" "$os_dist" "$OS_DIR" "$OS_DATA_DIR" opensearch)
  cat >"$conf/opensearch.yml" <<YML
cluster.name: searchsync-local
node.name: searchsync-os-1
path.data: $OS_DATA_DIR
path.logs: $OS_DIR/logs
network.host: 127.0.0.1
http.port: $OS_PORT
transport.port: $OS_TRANSPORT_PORT
discovery.type: single-node
action.destructive_requires_name: false
# a development node: keep the disk watermarks from blocking writes on a busy disk
cluster.routing.allocation.disk.threshold_enabled: false
YML
  # the integ-test-zip has no security plugin; a full distribution's would need turning off
  if [[ -d $os_home/plugins/opensearch-security ]]; then
    echo "plugins.security.disabled: true" >>"$conf/opensearch.yml"
  fi
  node_run $name OpenSearch "$OS_USER" "$OS_DIR" "$OS_DATA_DIR" "$os_home" opensearch "$log" ready \
    OPENSEARCH_JAVA_HOME="$OS_JAVA_HOME" OPENSEARCH_PATH_CONF="$conf" \
    OPENSEARCH_TMPDIR="$OS_DIR/tmp" OPENSEARCH_JAVA_OPTS="-Xms$OS_HEAP -Xmx$OS_HEAP"
}

case "${1:-}" in
  start) start ;;
  stop) stop_pid $name ;;
  status) status_line $name "$url" "$log" ;;
  *) die "usage: $0 start|stop|status" ;;
esac
