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
missing() {
  echo "bench-tool-jars: '$1' not found: install the Debian package $2 (apt-get install -y $2)" >&2
  exit 4
}
command -v "$JAVA" >/dev/null || missing java openjdk-17-jdk-headless
mkdir -p "$CACHE/bench-tool"
exec 9>"$CACHE/.lock"
flock 9
for v in "$@"; do
  pom="$ROOT/bench-tool/$v/pom.xml"
  [ -f "$pom" ] || { echo "bench-tool-jars: no pinned version $v" >&2; exit 1; }
  dir="$CACHE/bench-tool/$v"
  [ -f "$dir/complete" ] && continue
  command -v mvn >/dev/null || missing mvn maven
  rm -rf "$dir/lib.part" && mkdir -p "$dir"
  echo "bench-tool-jars: fetching rocketmq-example $v from Maven Central into $dir/lib" >&2
  if ! mvn -B -q -f "$pom" -Dmaven.repo.local="$CACHE/m2" \
      org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$dir/lib.part" >"$dir/fetch.log" 2>&1; then
    tail -5 "$dir/fetch.log" >&2
    echo "bench-tool-jars: fetching $v failed (log: $dir/fetch.log)" >&2
    exit 1
  fi
  ls "$dir/lib.part" | grep -q "^rocketmq-example-$v.jar$" \
    || { echo "bench-tool-jars: rocketmq-example-$v.jar missing from the fetch" >&2; exit 1; }
  rm -rf "$dir/lib" && mv "$dir/lib.part" "$dir/lib"
  (cd "$dir/lib" && ls | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1) >"$dir/checksum"
  "$JAVA" -version 2>&1 | head -1 >"$dir/java"
  touch "$dir/complete"
  echo "bench-tool-jars: $v: $(ls "$dir/lib" | wc -l) jars" >&2
done
