#!/usr/bin/env bash
# One Apache Kafka broker in KRaft mode (combined broker + controller), from the jars in $DIST_DIR.
# usage: kafka.sh start|stop|status
set -euo pipefail
source "$(dirname "$0")/env.sh"
source "$(dirname "$0")/lib.sh"
name=kafka
log="$LOG_DIR/kafka.log"
props="$STACK_DIR/kafka/server.properties"
cp="$DIST_DIR/kafka-libs/*"

kafka_java() {  # MAIN_CLASS ARGS...: run a Kafka tool on the stack's classpath
  "$JAVA_BIN" -Xmx256m -Dsearchsync.log.file="$LOG_DIR/kafka-tools.log" \
    -Dlog4j2.configurationFile="$REPO_DIR/deploy/local/conf/log4j2-kafka.yaml" -cp "$cp" "$@"
}

write_props() {
  mkdir -p "$STACK_DIR/kafka" "$KAFKA_DATA_DIR" "$LOG_DIR" "$RUN_DIR"
  cat >"$props" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$KAFKA_DATA_DIR
num.partitions=3
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
min.insync.replicas=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
log.retention.hours=168
PROPS
}

ready() { kafka_java org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$KAFKA_PORT" --list; }

start() {
  if pid_alive $name; then  # already running: only confirm it still answers
    wait_until "$READY_TIMEOUT" "Kafka" $name "$log" ready
    return
  fi
  [[ -d $DIST_DIR/kafka-libs ]] || die "Kafka jars missing: run deploy/local/fetch.sh"
  write_props
  if [[ ! -f $KAFKA_DATA_DIR/meta.properties ]]; then
    local id
    id=$(kafka_java kafka.tools.StorageTool random-uuid)
    kafka_java kafka.tools.StorageTool format --standalone -t "$id" -c "$props" >"$LOG_DIR/kafka-format.log" 2>&1 \
      || { tail -n 30 "$LOG_DIR/kafka-format.log" >&2; die "formatting Kafka's storage failed"; }
  fi
  nohup "$JAVA_BIN" -Xms"$KAFKA_HEAP" -Xmx"$KAFKA_HEAP" -XX:+UseG1GC -Djava.awt.headless=true \
    -Dsearchsync.log.file="$log" -Dlog4j2.configurationFile="$REPO_DIR/deploy/local/conf/log4j2-kafka.yaml" \
    -cp "$cp" kafka.Kafka "$props" >"$LOG_DIR/kafka.out" 2>&1 &
  echo $! >"$RUN_DIR/$name.pid"
  wait_until "$READY_TIMEOUT" "Kafka" $name "$log" ready
  create_topics
}

# The topics searchsync uses (outbox.event.article: the example type), created up front so consumers
# can be assigned before the first event.
create_topics() {
  local t
  for t in ${STACK_TOPICS:-outbox.event.wiki_page outbox.event.article searchsync.dlq}; do
    kafka_java org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$KAFKA_PORT" --create \
      --if-not-exists --topic "$t" --partitions "${STACK_TOPIC_PARTITIONS:-3}" --replication-factor 1 >/dev/null \
      || die "could not create topic $t"
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop_pid $name ;;
  status) status_line $name "127.0.0.1:$KAFKA_PORT" "$log" ;;
  ready) ready ;;
  *) die "usage: $0 start|stop|status" ;;
esac
