#!/usr/bin/env bash
# The real-client interop scenarios (interop/scenarios.py) with one client:
#   interop/run.sh cpp    Apache's C++ client from the PyPI wheel `rocketmq` 0.4.4 (make interop-cpp, CI)
#   interop/run.sh rust   the rocketmq-client-rust crate, built from interop/rust-client (make interop)
#   interop/run.sh java   Apache's Java client rocketmq-client JAVA_CLIENT (default 4.9.8; 5.3.3 too) from
#                         Maven Central under interop/java/src/InteropClient.java (make interop-java, CI)
#   interop/run.sh go     Apache's Go client (rocketmq-client-go v2), built from interop/go-client
#                         (make interop-go); exit 4 when there is no Go toolchain
# BIN: folder of broker-under-test and name-server (default target/release).
# INTEROP_BROKER=apache-5.3.3: against Apache's JVMs (harness serve) instead of ours.
# INTEROP_CAPTURE=<dir>: also write the request bodies the clients sent (the fixture corpus).
set -euo pipefail
cd "$(dirname "$0")/.."
client=${1:?usage: interop/run.sh cpp|rust|java|go}
BIN=${BIN:-target/release}
VENV=${INTEROP_VENV:-target/interop-venv}
CPP_WHEEL='rocketmq==0.4.4'

# The virtualenv lives in target/ (ignored by git); python3-venv provides `-m venv` on Debian.
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
case "$client" in
cpp)
  if ! "$VENV/bin/python" -c 'import rocketmq.client' >/dev/null 2>&1; then
    "$VENV/bin/pip" install -q --disable-pip-version-check "$CPP_WHEEL"
  fi
  # Importing loads the wheel's bundled librocketmq.so: fails here if it does not link.
  "$VENV/bin/python" -c 'import rocketmq.client'
  args=(--client cpp)
  ;;
rust)
  cargo build --release --manifest-path interop/rust-client/Cargo.toml --target-dir target/interop-rust
  args=(--client rust --rust-bin target/interop-rust/release/interop-rust-client)
  ;;
java)
  # Fetches the pinned client once and compiles our driver; exit 4 names a missing tool.
  bash interop/java/build.sh "${JAVA_CLIENT:-4.9.8}" >/dev/null
  args=(--client java --java-version "${JAVA_CLIENT:-4.9.8}")
  ;;
go)
  if ! command -v go >/dev/null 2>&1; then
    echo "interop/run.sh go: no Go toolchain on PATH; install Debian's golang-go" >&2
    exit 4
  fi
  # Modules, build cache and binary all stay in target/ (nothing in $HOME); go.mod and go.sum
  # pin every module, and the machine's own Go builds it (no toolchain download).
  GODIR="$PWD/target/interop-go"
  export GOPATH="$GODIR/gopath" GOMODCACHE="$GODIR/mod" GOCACHE="$GODIR/cache" \
    GOFLAGS="-modcacherw -buildvcs=false -mod=readonly" GOTOOLCHAIN=local
  (cd interop/go-client && go build -o "$GODIR/interop-go-client" .)
  args=(--client go --go-bin "$GODIR/interop-go-client")
  ;;
*)
  echo "unknown client $client (cpp, rust, java or go)" >&2
  exit 2
  ;;
esac
# INTEROP_BROKER=apache-5.3.3: Apache's own name server and broker (the released jars) through
# `harness serve` (interop/apache_cluster.py) instead of ours; INTEROP_HARNESS: that binary.
BROKER=${INTEROP_BROKER:-in-tree}
LIMIT=900
if [ "$BROKER" != in-tree ]; then
  bash scripts/apache-jars.sh "${BROKER#apache-}"
  args+=(--broker "$BROKER" --harness "${INTEROP_HARNESS:-$BIN/harness}")
  # Apache's JVMs start in seconds each and a scenario starts two or three of them.
  LIMIT=1800
fi
if [ -n "${INTEROP_CAPTURE:-}" ]; then
  args+=(--capture "$INTEROP_CAPTURE")
fi
# The clients write their logs under $HOME (~/logs/rocketmq-cpp, ~/logs/rocketmqlogs): keep
# them in target/. The whole run is bounded; each scenario bounds itself too.
mkdir -p target/interop-home
HOME="$PWD/target/interop-home" timeout "$LIMIT" "$VENV/bin/python" interop/scenarios.py \
  "${args[@]}" --bin "$BIN"
