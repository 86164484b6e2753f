# Settings of the local stack. Every value can be overridden from the environment.
# Sourced by the other scripts; it only sets variables (and one helper to choose SVC_DIR).
REPO_DIR=${REPO_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
STACK_DIR=${STACK_DIR:-$REPO_DIR/.stack}          # all state: jars, data, logs, pids (git-ignored)
DIST_DIR=${DIST_DIR:-$STACK_DIR/dist}
LOG_DIR=${LOG_DIR:-$STACK_DIR/logs}
RUN_DIR=${RUN_DIR:-$STACK_DIR/run}

MYSQL_HOST=${MYSQL_HOST:-127.0.0.1}
MYSQL_PORT=${MYSQL_PORT:-3306}
MYSQL_DATABASE=${MYSQL_DATABASE:-searchsync}
MYSQL_SERVER_ID=${MYSQL_SERVER_ID:-1}               # the server's own id in the replication topology
# The services' own state (MariaDB's data, Elasticsearch's home, data and logs) belongs to their
# service users (mysql, $ES_USER), which must be able to traverse every parent directory of it. A
# clone inside a directory other users cannot enter (a mode-700 home, say) cannot give them that,
# so there that state lives outside the clone, in a directory named after it (`make clean` removes
# it with the rest). Elsewhere it stays inside $STACK_DIR.
_others_can_traverse() {  # DIR: every existing ancestor of DIR lets other users through
  local d=$1 m
  while [[ -n $d && $d != / ]]; do
    if [[ -e $d ]]; then m=$(stat -L -c %A "$d") && [[ ${m:9:1} == [xt] ]] || return 1; fi
    d=$(dirname "$d")
  done
}
if [[ -z ${SVC_DIR:-} ]]; then
  if _others_can_traverse "$(dirname "$STACK_DIR")"; then
    SVC_DIR=$STACK_DIR
  else
    SVC_DIR=/var/lib/searchsync-stack/$(printf %s "$STACK_DIR" | sha256sum | cut -c1-12)
  fi
fi

MYSQL_DIR=${MYSQL_DIR:-$SVC_DIR/mariadb}
MYSQL_DATA_DIR=${MYSQL_DATA_DIR:-$MYSQL_DIR/data}
MYSQL_SOCKET=${MYSQL_SOCKET:-$MYSQL_DIR/mysqld.sock}
# users: the consumer (least privilege), the application side (writer/loadgen), Debezium
STACK_DB_USER=${STACK_DB_USER:-searchsync}
STACK_DB_PASSWORD=${STACK_DB_PASSWORD:-searchsync}
APP_DB_USER=${APP_DB_USER:-searchsync_app}
APP_DB_PASSWORD=${APP_DB_PASSWORD:-searchsync_app}
DEBEZIUM_DB_USER=${DEBEZIUM_DB_USER:-debezium}
DEBEZIUM_DB_PASSWORD=${DEBEZIUM_DB_PASSWORD:-debezium}

KAFKA_PORT=${KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-9093}
KAFKA_DATA_DIR=${KAFKA_DATA_DIR:-$STACK_DIR/kafka/data}
KAFKA_HEAP=${KAFKA_HEAP:-512m}

CONNECT_PORT=${CONNECT_PORT:-8083}
CONNECT_HEAP=${CONNECT_HEAP:-1g}
CONNECTOR_NAME=${CONNECTOR_NAME:-searchsync-outbox}
CONNECT_GROUP_ID=${CONNECT_GROUP_ID:-searchsync-connect}   # the worker group and its storage topics' prefix
# Debezium: its replica id towards MariaDB (unique per MariaDB server), its topic prefix, its schema history
DEBEZIUM_SERVER_ID=${DEBEZIUM_SERVER_ID:-184054}
DEBEZIUM_TOPIC_PREFIX=${DEBEZIUM_TOPIC_PREFIX:-searchsync}
DEBEZIUM_SCHEMA_HISTORY_TOPIC=${DEBEZIUM_SCHEMA_HISTORY_TOPIC:-searchsync.schema-history}

ES_PORT=${ES_PORT:-9200}
ES_TRANSPORT_PORT=${ES_TRANSPORT_PORT:-9300}
ES_DIR=${ES_DIR:-$SVC_DIR/elasticsearch}
ES_DATA_DIR=${ES_DATA_DIR:-$ES_DIR/data}
ES_HEAP=${ES_HEAP:-1g}
ES_USER=${ES_USER:-searchsync-es}                 # Elasticsearch refuses to run as root

# Which search engine `make up` starts on $ES_PORT: elasticsearch (default) or opensearch.
# WITH_OPENSEARCH=1 starts OpenSearch beside Elasticsearch, on $OS_PORT (what `make test` does).
SEARCH_ENGINE=${SEARCH_ENGINE:-elasticsearch}
if [[ $SEARCH_ENGINE == opensearch ]]; then OS_PORT=${OS_PORT:-$ES_PORT}; else OS_PORT=${OS_PORT:-9201}; fi
OS_TRANSPORT_PORT=${OS_TRANSPORT_PORT:-9301}
OS_DIR=${OS_DIR:-$SVC_DIR/opensearch}
OS_DATA_DIR=${OS_DATA_DIR:-$OS_DIR/data}
OS_HEAP=${OS_HEAP:-1g}
OS_USER=${OS_USER:-searchsync-os}                 # OpenSearch refuses to run as root
# OpenSearch 2 runs on Java 17..21 (its security manager is gone from 24 on): the newest there
OS_JAVA_HOME=${OS_JAVA_HOME:-$( (ls -d /usr/lib/jvm/temurin-{17,18,19,20,21}-jdk* /usr/lib/jvm/java-{17,18,19,20,21}-openjdk* 2>/dev/null || true) | sort -V | tail -n 1)}

JAVA_BIN=${JAVA_BIN:-java}                       # Kafka and Connect: Java 17+
# Elasticsearch 9 needs Java 21+: the newest JDK 21..29 under /usr/lib/jvm unless given
ES_JAVA_HOME=${ES_JAVA_HOME:-$( (ls -d /usr/lib/jvm/temurin-2[1-9]-jdk* /usr/lib/jvm/java-2[1-9]-openjdk* 2>/dev/null || true) | sort -V | tail -n 1)}

CLI_BIN=${CLI_BIN:-$REPO_DIR/.venv/bin/searchsync}  # the CLI: grants (migrate.sh)

READY_TIMEOUT=${READY_TIMEOUT:-180}               # seconds each service may take to become ready
