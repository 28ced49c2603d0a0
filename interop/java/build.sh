#!/usr/bin/env bash
# Fetches Apache RocketMQ's Java client VERSION (interop/java/<version>/pom.xml) from Maven Central
# into target/interop-java/<version>/lib, once (a second call finds <version>/complete and touches
# no network), then compiles our interop program (interop/java/src/InteropClient.java) against it
# into target/interop-java/<version>/classes whenever the source is newer. Prints the classpath.
# Exit 4 when a tool is missing, naming the Debian package; 1 when the fetch or compile fails.
# Used by interop/run.sh java (make interop-java).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
v=${1:?usage: interop/java/build.sh VERSION (one of: $(ls "$ROOT/interop/java" | grep -E '^[0-9]' | tr '\n' ' '))}
CACHE=${INTEROP_JAVA_CACHE:-$ROOT/target/interop-java}
# The Maven repository and its lock are scripts/apache-jars.sh's: the 5.3.3 client's
# dependencies are mostly there already, and one lock keeps two Maven runs off one repository.
APACHE_CACHE=${APACHE_CACHE:-$ROOT/target/apache}
JBIN=${JAVA_HOME:+$JAVA_HOME/bin/}
WHO=interop-java MAVEN_CACHE=$APACHE_CACHE
. "$ROOT/scripts/lib/maven.sh"
command -v "${JBIN}java" >/dev/null || missing java openjdk-17-jdk-headless
command -v "${JBIN}javac" >/dev/null || missing javac openjdk-17-jdk-headless
pom="$ROOT/interop/java/$v/pom.xml"
if [ ! -f "$pom" ]; then
  echo "interop-java: no pinned client version $v (have: $(ls "$ROOT/interop/java" | grep -E '^[0-9]' | tr '\n' ' '))" >&2
  exit 1
fi
dir="$CACHE/$v"
mkdir -p "$dir" "$APACHE_CACHE"
if [ ! -f "$dir/complete" ]; then
  maven_lock
  fetch_pom_deps "$pom" "$dir" "rocketmq-client $v"
  touch "$dir/complete"
  flock -u 9
fi
src="$ROOT/interop/java/src/InteropClient.java"
if [ ! -f "$dir/classes/InteropClient.class" ] || [ "$src" -nt "$dir/classes/InteropClient.class" ]; then
  rm -rf "$dir/classes" && mkdir -p "$dir/classes"
  "${JBIN}javac" -nowarn -encoding UTF-8 -cp "$dir/lib/*" -d "$dir/classes" "$src" >&2
fi
echo "$dir/classes:$dir/lib/*"
