#!/usr/bin/env bash
# Fetches RocketMQ's benchmark producer (rocketmq-example, bench-tool/<version>/pom.xml) with its
# runtime dependencies from Maven Central into target/apache/bench-tool/<version>/lib, once: a
# second call finds <version>/complete and touches no network. The Maven repository is the one
# scripts/apache-jars.sh uses (target/apache/m2), under the same lock.
# Exit 4 when a tool is missing, naming the Debian package; 1 when the fetch fails.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${APACHE_CACHE:-$ROOT/target/apache}
JAVA=${JAVA_HOME:+$JAVA_HOME/bin/}java
[ $# -gt 0 ] || set -- $(ls "$ROOT/bench-tool" | grep -E '^[0-9]')
WHO=bench-tool-jars MAVEN_CACHE=$CACHE
. "$ROOT/scripts/lib/maven.sh"
command -v "$JAVA" >/dev/null || missing java openjdk-17-jdk-headless
mkdir -p "$CACHE/bench-tool"
maven_lock
for v in "$@"; do
  pom="$ROOT/bench-tool/$v/pom.xml"
  [ -f "$pom" ] || { echo "bench-tool-jars: no pinned version $v" >&2; exit 1; }
  dir="$CACHE/bench-tool/$v"
  [ -f "$dir/complete" ] && continue
  fetch_pom_deps "$pom" "$dir" "rocketmq-example $v"
  ls "$dir/lib" | grep -q "^rocketmq-example-$v.jar$" \
    || { echo "bench-tool-jars: rocketmq-example-$v.jar missing from the fetch" >&2; exit 1; }
  lib_checksum "$dir" >"$dir/checksum"
  "$JAVA" -version 2>&1 | head -1 >"$dir/java"
  touch "$dir/complete"
  echo "bench-tool-jars: $v: $(ls "$dir/lib" | wc -l) jars" >&2
done
