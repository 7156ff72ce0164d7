#!/usr/bin/env bash
# Configures and builds muster. Binaries land in <build dir>/bin.
#
# Usage: scripts/build.sh [BUILD_DIR] [extra cmake -D options...]
#   BUILD_DIR defaults to build/. Idempotent: re-running rebuilds what changed.
# Warnings are errors here (MUSTER_WERROR=ON), as in CI; a plain cmake
# configure leaves them warnings.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${1:-"$ROOT/build"}
shift || true

GENERATOR=()
if command -v ninja >/dev/null 2>&1; then GENERATOR=(-G Ninja); fi
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" "${GENERATOR[@]}" -DMUSTER_WERROR=ON "$@"
elif (($# > 0)) || ! grep -q '^MUSTER_WERROR:BOOL=ON$' "$BUILD_DIR/CMakeCache.txt"; then
  cmake "$BUILD_DIR" -DMUSTER_WERROR=ON "$@"
fi
cmake --build "$BUILD_DIR" --parallel "$(nproc)"
