# Sourced by the scripts that fetch pinned Java artifacts from Maven Central (scripts/apache-jars.sh,
# scripts/bench-tool-jars.sh, interop/java/build.sh): one Maven repository (target/apache/m2, or
# $APACHE_CACHE/m2) and one lock ($APACHE_CACHE/.lock) for all of them, so two fetches never
# share a half-written repository, and one way to say that a tool is missing (exit 4).
# The caller sets WHO (its name in messages) and MAVEN_CACHE (the folder holding m2 and .lock).

# missing TOOL PACKAGE: the tool is not on PATH; name the Debian package and exit 4.
missing() {
  echo "$WHO: '$1' not found: install the Debian package $2 (apt-get install -y $2)" >&2
  exit 4
}

# maven_lock: takes the shared lock on file descriptor 9 (held until the script exits or
# `flock -u 9`).
maven_lock() {
  mkdir -p "$MAVEN_CACHE"
  exec 9>"$MAVEN_CACHE/.lock"
  flock 9
}

# fetch_pom_deps POM DIR WHAT: POM's runtime dependencies into DIR/lib, replaced whole (fetched
# into DIR/lib.part first, so an interrupted fetch never leaves a partial lib); Maven's output in
# DIR/fetch.log. Exit 4 without mvn, 1 when the fetch fails. Take maven_lock first.
fetch_pom_deps() {
  local pom=$1 dir=$2 what=$3
  command -v mvn >/dev/null || missing mvn maven
  rm -rf "$dir/lib.part" && mkdir -p "$dir"
  echo "$WHO: fetching $what from Maven Central into $dir/lib" >&2
  if ! mvn -B -q -f "$pom" -Dmaven.repo.local="$MAVEN_CACHE/m2" \
      org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$dir/lib.part" >"$dir/fetch.log" 2>&1; then
    tail -5 "$dir/fetch.log" >&2
    echo "$WHO: fetching $what failed (log: $dir/fetch.log)" >&2
    exit 1
  fi
  rm -rf "$dir/lib" && mv "$dir/lib.part" "$dir/lib"
}

# lib_checksum DIR: sha256 over DIR/lib's jars, sorted by name (recorded in run.json).
lib_checksum() {
  (cd "$1/lib" && ls | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
}
