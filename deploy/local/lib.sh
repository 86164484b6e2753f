# Helpers shared by the stack scripts. Sourced; defines functions only.
# shellcheck shell=bash

say()  { printf '%s\n' "$*"; }
warn() { printf 'stack: %s\n' "$*" >&2; }
die()  { warn "$*"; exit 1; }

# pid_alive NAME: the service started by these scripts is still running
pid_alive() {
  local f="$RUN_DIR/$1.pid"
  [[ -s $f ]] && kill -0 "$(cat "$f")" 2>/dev/null
}

# wait_until SECONDS DESCRIPTION NAME LOG CMD...: run CMD until it succeeds or the deadline passes.
# Fails early if the service's process died; on failure prints the last lines of LOG.
wait_until() {
  local timeout=$1 what=$2 name=$3 log=$4
  shift 4
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if [[ -n $name ]] && ! pid_alive "$name"; then
      warn "$what: the process exited before it was ready; last lines of $log:"
      tail -n 40 "$log" >&2 2>/dev/null || true
      return 1
    fi
    if ((SECONDS >= deadline)); then
      warn "$what: not ready after ${timeout}s; last lines of $log:"
      tail -n 40 "$log" >&2 2>/dev/null || true
      return 1
    fi
    sleep 1
  done
}

# stop_pid NAME: TERM the process in RUN_DIR/NAME.pid, wait for it, then KILL
stop_pid() {
  local name=$1 f="$RUN_DIR/$1.pid" pid i
  [[ -s $f ]] || { say "$name: not running"; return 0; }
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 60; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    say "$name: stopped (pid $pid)"
  else
    say "$name: not running (stale pid $pid)"
  fi
  rm -f "$f"
}

status_line() {  # NAME ADDRESS LOG
  if pid_alive "$1"; then
    printf '%-15s running  pid %-8s %-28s log %s\n' "$1" "$(cat "$RUN_DIR/$1.pid")" "$2" "$3"
  else
    printf '%-15s stopped                  %-28s log %s\n' "$1" "$2" "$3"
  fi
}

mysql_root() { mariadb --socket="$MYSQL_SOCKET" -uroot "$@"; }

# Elasticsearch and OpenSearch nodes (elasticsearch.sh, opensearch.sh). Each refuses to run as
# root, so each runs as its own unprivileged user.
#
# node_home USER DIST DIR DATA_DIR BIN: the user, the node's directories, and a fresh copy of the
# distribution's config in DIR/config each start (nothing stale, such as a keystore left by
# security auto-configuration, survives into this one). Prints the distribution's home the user
# runs: outside $STACK_DIR, a copy it can reach.
node_home() {
  local user=$1 dist=$2 dir=$3 data=$4 bin=$5 home=$2
  id -u "$user" >/dev/null 2>&1 \
    || useradd --system --no-create-home --shell /usr/sbin/nologin "$user" \
    || die "could not create the system user $user (the search engine will not run as root)"
  install -d -m 755 "$SVC_DIR" "$dir"
  mkdir -p "$data" "$dir/logs" "$dir/tmp" "$RUN_DIR" "$LOG_DIR"
  if [[ $SVC_DIR != "$STACK_DIR" ]]; then
    home="$dir/$(basename "$dist")"
    [[ -x $home/bin/$bin ]] || cp -a "$dist" "$home"
  fi
  rm -rf "$dir/config"
  mkdir -p "$dir/config"
  cp -r "$home/config/." "$dir/config/"
  printf '%s\n' "$home"
}

# node_run NAME WHAT USER DIR DATA_DIR HOME BIN LOG READY ENV...: start HOME/bin/BIN as USER
# with ENV (VAR=value ...) daemonized, keep its pid as NAME's, wait until READY succeeds.
node_run() {
  local name=$1 what=$2 user=$3 dir=$4 data=$5 home=$6 bin=$7 log=$8 ready=$9 i
  shift 9
  chown -R "$user" "$dir" "$home"
  runuser -u "$user" -- test -w "$data" -a -x "$home/bin/$bin" \
    || die "the user $user cannot reach $dir or $home: set SVC_DIR to a directory every user can traverse"
  ln -sf "$log" "$LOG_DIR/$name.log"
  runuser -u "$user" -- env "$@" "$home/bin/$bin" -d -p "$dir/node.pid" >"$LOG_DIR/$name.out" 2>&1 \
    || { tail -n 40 "$LOG_DIR/$name.out" >&2; die "$what did not start"; }
  for ((i = 0; i < 30; i++)); do [[ -s $dir/node.pid ]] && break; sleep 1; done
  cp "$dir/node.pid" "$RUN_DIR/$name.pid" 2>/dev/null || die "$what wrote no pid file; see $LOG_DIR/$name.out"
  wait_until "$READY_TIMEOUT" "$what" "$name" "$log" "$ready"
}
