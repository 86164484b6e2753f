#!/usr/bin/env bash
# Brings the stack's jars from Maven Central into $DIST_DIR (Kafka + Connect classpath, the Debezium
# MariaDB connector plugin, the Elasticsearch and OpenSearch test distributions). Idempotent: does nothing when the
# pom has not changed since the last successful fetch. Maven's cache (~/.m2) makes a re-fetch fast.
set -euo pipefail
source "$(dirname "$0")/env.sh"
source "$(dirname "$0")/lib.sh"

pom="$REPO_DIR/deploy/local/maven/pom.xml"
stamp="$DIST_DIR/.fetched"
want=$(sha256sum "$pom" | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
  exit 0
fi
command -v mvn >/dev/null || die "mvn not found: install Maven (apt-get install maven) or run .ci/run"
say "fetching Kafka, Connect, Debezium, Elasticsearch and OpenSearch from Maven Central into $DIST_DIR ..."
rm -rf "$DIST_DIR"
mkdir -p "$DIST_DIR"
mvn -q -B -f "$pom" -Dstack.dir="$STACK_DIR" package || die "maven could not fetch the stack's jars (see above)"

# Connect loads org.apache.kafka.* and org.slf4j.* from the worker's classpath; copies in the plugin
# directory would only shadow them, so keep the plugin directory to Debezium and its own dependencies.
plugin_dir="$DIST_DIR/connect-plugins/debezium-connector-mariadb"
[[ -d $plugin_dir ]] || die "the Debezium plugin archive did not unpack into $plugin_dir"
rm -f "$plugin_dir"/kafka-clients-*.jar "$plugin_dir"/connect-api-*.jar "$plugin_dir"/slf4j-api-*.jar

n=$(ls "$DIST_DIR/kafka-libs" | grep -c '^slf4j-api-2' || true)
[[ $n == 1 ]] || die "expected exactly one SLF4J 2 API jar in kafka-libs, found $n"
echo "$want" >"$stamp"
say "fetched: $(du -sh "$DIST_DIR" | cut -f1)"
