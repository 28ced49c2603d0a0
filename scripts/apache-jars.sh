#!/usr/bin/env bash
# Fetches Apache RocketMQ's released jars for each VERSION given (apache/<version>/pom.xml) from
# Maven Central into target/apache/<version>/lib, once: a second call finds <version>/complete
# and touches no network. Beside the jars it writes
#   keys.txt  every broker key with its default, as `BrokerStartup -p` prints them (the key list
#             the harness checks profiles against: Apache ignores unknown keys in silence);
#   checksum  sha256 over the jars (sorted by name), recorded in run.json;
#   java      the `java -version` line the harness starts them with.
# Exit 4 when a tool is missing, naming the Debian package; 1 when the fetch fails.
# The harness runs this itself on first use; `make apache` runs it for every pinned version.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${APACHE_CACHE:-$ROOT/target/apache}
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
[ $# -gt 0 ] || set -- $(ls "$ROOT/apache" | grep -E '^[0-9]')
WHO=apache-jars MAVEN_CACHE=$CACHE
. "$ROOT/scripts/lib/maven.sh"
command -v "$JAVA" >/dev/null || missing java openjdk-17-jdk-headless
# Tests and runs may ask for the same version at once: one fetch at a time.
maven_lock
for v in "$@"; do
  pom="$ROOT/apache/$v/pom.xml"
  if [ ! -f "$pom" ]; then
    echo "apache-jars: no pinned version $v (have: $(ls "$ROOT/apache" | grep -E '^[0-9]' | tr '\n' ' '))" >&2
    exit 1
  fi
  dir="$CACHE/$v"
  [ -f "$dir/complete" ] && continue
  fetch_pom_deps "$pom" "$dir" "Apache RocketMQ $v"
  # The key list from the broker itself: -p prints every config item and exits before
  # opening a port. A scratch home keeps it from touching ~/.
  scratch=$(mktemp -d)
  mkdir -p "$scratch/conf"
  : >"$scratch/broker.conf"
  printf '<configuration><appender name="o" class="ch.qos.logback.core.ConsoleAppender"><encoder><pattern>%%msg%%n</pattern></encoder></appender><root level="INFO"><appender-ref ref="o"/></root></configuration>\n' \
    >"$scratch/conf/logback_broker.xml"
  "$JAVA" -Xmx256m -Duser.home="$scratch" -Drocketmq.home.dir="$scratch" \
    -cp "$dir/lib/*" org.apache.rocketmq.broker.BrokerStartup -c "$scratch/broker.conf" -p \
    >"$scratch/p.out" 2>&1 || true
  grep -oE '[A-Za-z][A-Za-z0-9]*=.*$' "$scratch/p.out" | sed -E 's/[[:space:]]+$//' | sort -u -t= -k1,1 >"$dir/keys.txt.part"
  rm -rf "$scratch"
  if [ "$(wc -l <"$dir/keys.txt.part")" -lt 100 ]; then
    echo "apache-jars: BrokerStartup -p printed $(wc -l <"$dir/keys.txt.part") keys for $v (expected hundreds)" >&2
    exit 1
  fi
  mv "$dir/keys.txt.part" "$dir/keys.txt"
  lib_checksum "$dir" >"$dir/checksum"
  "$JAVA" -version 2>&1 | head -1 >"$dir/java"
  touch "$dir/complete"
  echo "apache-jars: $v: $(ls "$dir/lib" | wc -l) jars, $(wc -l <"$dir/keys.txt") broker keys" >&2
done
