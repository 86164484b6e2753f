#!/usr/bin/env bash
# The newcomer's check: a fresh clone in a mode-700 directory runs the README's two commands,
# `make demo` and then `make test`, and both must pass.
#
# usage: deploy/check-bare-machine.sh [--purge-mariadb] [--keep]
#   --purge-mariadb  first remove Debian's MariaDB packages (as root), so the run proves that the
#                    project installs them itself, as on a machine that never had them
#   --keep           keep the clone and its stack state afterwards (default: removed)
# The stack's ports must be free: stop any running stack first (`make down`).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
purge=0 keep=0
for arg in "$@"; do
  case $arg in
    --purge-mariadb) purge=1 ;;
    --keep) keep=1 ;;
    *) echo "usage: $0 [--purge-mariadb] [--keep]" >&2; exit 2 ;;
  esac
done

for port in 3306 9092 9200 9201 8083; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "check: port $port is in use: stop the running stack first (make down)" >&2
    exit 2
  fi
done

if ((purge)); then
  [[ $(id -u) == 0 ]] || { echo "check: --purge-mariadb needs root" >&2; exit 2; }
  echo "check: removing MariaDB's packages, as on a machine that never had them"
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq 'mariadb-server*' 'mariadb-client*' >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get autoremove -y -qq >/dev/null
  ! command -v mariadbd >/dev/null || { echo "check: mariadbd is still installed" >&2; exit 1; }
fi

top=$(mktemp -d)  # mktemp makes it mode 700: the service users cannot enter it
chmod 700 "$top"
clone="$top/searchsync"
git clone -q "$repo" "$clone"
echo "check: fresh clone of $(git -C "$repo" rev-parse --short HEAD) in $clone (parent mode $(stat -c %a "$top"))"

cleanup() {
  (cd "$clone" && bash deploy/local/stack.sh down >/dev/null 2>&1) || true
  if ((keep)); then
    echo "check: kept $clone"
  else
    (cd "$clone" && bash deploy/local/stack.sh clean >/dev/null 2>&1) || true
    rm -rf "$top"
  fi
}
trap cleanup EXIT

declare -A result
for target in demo test; do
  t0=$SECONDS
  if (cd "$clone" && make "$target") >"$top/make-$target.log" 2>&1; then
    result[$target]="ok ($((SECONDS - t0)) s)"
  else
    result[$target]="FAILED ($((SECONDS - t0)) s); last lines of $top/make-$target.log:"
    tail -n 40 "$top/make-$target.log" >&2
    keep=1
  fi
  echo "check: make $target: ${result[$target]}"
  [[ $target == demo ]] && (cd "$clone" && bash deploy/local/stack.sh down >/dev/null 2>&1 || true)
done
grep -E '^[0-9]+ passed|passed' "$top/make-test.log" | tail -n 1 | sed 's/^/check: make test: /' || true
[[ ${result[demo]} == ok* && ${result[test]} == ok* ]]
