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

ensure_user() {
  id -u "$ES_USER" >/dev/null 2>&1 && return 0
  useradd --system --no-create-home --shell /usr/sbin/nologin "$ES_USER" \
    || die "could not create the system user $ES_USER (Elasticsearch will not run as root)"
}

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
  ensure_user
  install -d -m 755 "$SVC_DIR" "$ES_DIR"
  mkdir -p "$ES_DATA_DIR" "$ES_DIR/logs" "$ES_DIR/tmp" "$RUN_DIR" "$LOG_DIR"
  # the ES user runs the distribution itself: outside $STACK_DIR it needs a copy it can reach
  local es_home=$es_dist
  if [[ $SVC_DIR != "$STACK_DIR" ]]; then
    es_home="$ES_DIR/$(basename "$es_dist")"
    [[ -x $es_home/bin/elasticsearch ]] || cp -a "$es_dist" "$es_home"
  fi
  # a fresh copy of the distribution's config each start: nothing stale (such as a keystore left by
  # security auto-configuration) survives into this one
  rm -rf "$conf"
  mkdir -p "$conf"
  cp -r "$es_home/config/." "$conf/"
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
  chown -R "$ES_USER" "$ES_DIR" "$es_home"
  runuser -u "$ES_USER" -- test -w "$ES_DATA_DIR" -a -x "$es_home/bin/elasticsearch" \
    || die "the user $ES_USER cannot reach $ES_DIR or $es_home: set SVC_DIR to a directory every user can traverse"
  ln -sf "$log" "$LOG_DIR/elasticsearch.log"
  runuser -u "$ES_USER" -- env ES_JAVA_HOME="$ES_JAVA_HOME" ES_PATH_CONF="$conf" \
    ES_TMPDIR="$ES_DIR/tmp" ES_JAVA_OPTS="-Xms$ES_HEAP -Xmx$ES_HEAP" \
    "$es_home/bin/elasticsearch" -d -p "$ES_DIR/es.pid" \
    >"$LOG_DIR/elasticsearch.out" 2>&1 || { tail -n 40 "$LOG_DIR/elasticsearch.out" >&2; die "Elasticsearch did not start"; }
  local i
  for ((i = 0; i < 30; i++)); do [[ -s $ES_DIR/es.pid ]] && break; sleep 1; done
  cp "$ES_DIR/es.pid" "$RUN_DIR/$name.pid" 2>/dev/null || die "Elasticsearch wrote no pid file; see $LOG_DIR/elasticsearch.out"
  wait_until "$READY_TIMEOUT" "Elasticsearch" $name "$log" ready
}

case "${1:-}" in
  start) start ;;
  stop) stop_pid $name ;;
  status) status_line $name "$url" "$log" ;;
  *) die "usage: $0 start|stop|status" ;;
esac
