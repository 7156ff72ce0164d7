#!/usr/bin/env bash
# Configures and builds muster. Binaries land in <build dir>/bin.
#
# Usage: scripts/build.sh [BUILD_DIR] [extra cmake -D options...]
#   BUILD_DIR defaults to build/. Idempotent: re-running rebuilds what changed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${1:-"$ROOT/build"}
shift || true

GENERATOR=()
if command -v ninja >/dev/null 2>&1; then GENERATOR=(-G Ninja); fi
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" "${GENERATOR[@]}" "$@"
elif (($# > 0)); then
  cmake "$BUILD_DIR" "$@"
fi
cmake --build "$BUILD_DIR" --parallel "$(nproc)"
