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
