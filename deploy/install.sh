#!/usr/bin/env bash
# The one install step that `make demo`, `make test` and `.ci/run` share: installs what this machine
# lacks for the local stack (Debian packages), or, when not root, prints the exact command and stops.
# `install.sh python` checks only what the Python environment needs (`make venv`, `make dist`):
# no database, no JDK. Idempotent: on a machine that has everything it only checks, in well under
# a second.
set -euo pipefail

mode=${1:-stack}
[[ $mode == stack || $mode == python ]] || { echo "usage: install.sh [stack|python]" >&2; exit 2; }

need=()
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
if [[ $mode == stack ]]; then
  command -v mariadbd >/dev/null || need+=(mariadb-server)
  command -v mariadb >/dev/null || need+=(mariadb-client)
  command -v mvn >/dev/null || need+=(maven)
  command -v curl >/dev/null || need+=(curl)
  command -v kcat >/dev/null || need+=(kcat)  # tests read dead letters as an operator would
  command -v promtool >/dev/null || need+=(prometheus)  # `promtool test rules` on the alert rules
  command -v java >/dev/null || need+=(openjdk-17-jdk-headless)
  command -v runuser >/dev/null || need+=(util-linux)

  # Elasticsearch 9 needs Java 21+: ES_JAVA_HOME, or any JDK 21..29 under /usr/lib/jvm. Debian 12
  # packages only Java 17, so this one cannot be installed here: say so before anything else.
  if [[ -z ${ES_JAVA_HOME:-} ]] && ! compgen -G '/usr/lib/jvm/temurin-2[1-9]-jdk*' >/dev/null \
    && ! compgen -G '/usr/lib/jvm/java-2[1-9]-openjdk*' >/dev/null; then
    echo "install: Elasticsearch 9 needs a Java 21+ JDK: install one under /usr/lib/jvm or set ES_JAVA_HOME" >&2
    exit 1
  fi
fi

((${#need[@]})) || exit 0

if [[ $(id -u) != 0 ]]; then
  {
    echo "install: this machine lacks: ${need[*]}"
    echo "install: run this once as root, then the same make command again:"
    echo "    sudo apt-get update && sudo apt-get install -y ${need[*]}"
  } >&2
  exit 1
fi
echo "install: installing ${need[*]} (Debian packages) ..."
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null \
  || { echo "install: apt-get install ${need[*]} failed (see above)" >&2; exit 1; }
echo "install: done"
