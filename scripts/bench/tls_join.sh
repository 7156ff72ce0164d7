#!/usr/bin/env bash
# What the TLS handshake adds to an agent's join on loopback: plain against
# mutual TLS, alternated, per phase (scripts/bench/tls_join.py says how).
# Usage: scripts/bench/tls_join.sh [--build-dir DIR] [--samples N] [--agent-samples M]
#   (MUSTER_SKIP_BUILD=1 skips the build of musterd, muster and rdzv_load)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD="$ROOT/build-bench"
ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) BUILD=$2; shift 2 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
if [[ "${MUSTER_SKIP_BUILD:-0}" != 1 ]]; then
  if [[ ! -f "$BUILD/build.ninja" ]]; then
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DMUSTER_WERROR=ON -DMUSTER_CUDA=off \
      -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  # rdzv_load is built only where asked for (MUSTER_BUILD_BENCHMARKS).
  cmake "$BUILD" -DMUSTER_BUILD_BENCHMARKS=ON >/dev/null
  cmake --build "$BUILD" --target musterd muster rdzv_load >/dev/null
fi
exec /usr/bin/python3 "$ROOT/scripts/bench/tls_join.py" --build-dir "$BUILD" ${ARGS[@]+"${ARGS[@]}"}
