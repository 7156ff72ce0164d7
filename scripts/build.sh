#!/usr/bin/env bash
# Configures and builds muster. Binaries land in <build dir>/bin.
#
# Usage: scripts/build.sh [BUILD_DIR] [extra cmake -D options...] [--target TARGET...]
#   BUILD_DIR defaults to build/. Idempotent: re-running rebuilds what changed.
#   --target: build only these targets (and what they need), not everything.
# Warnings are errors here (MUSTER_WERROR=ON), as in CI; a plain cmake
# configure leaves them warnings.
#
# Compiler cache: when ccache is installed, every compile goes through it
# (C++, C and CUDA). The cache is ccache's own (CCACHE_DIR, by default
# ~/.cache/ccache), outside the clone, shared by every build directory and
# every clone: paths under the clone are hashed relative to it
# (CCACHE_BASEDIR, CCACHE_NOHASHDIR), so a fresh clone elsewhere hits the
# objects an earlier clone compiled. MUSTER_CCACHE=0 builds without it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${1:-"$ROOT/build"}
shift || true

OPTIONS=() TARGETS=()
while (($# > 0)); do
  if [[ $1 == --target ]]; then
    shift
    TARGETS=("$@")
    (($# > 0)) || { echo "build.sh: --target names no target" >&2; exit 2; }
    break
  fi
  OPTIONS+=("$1")
  shift
done

GENERATOR=()
if command -v ninja >/dev/null 2>&1; then GENERATOR=(-G Ninja); fi
LAUNCHER=()
if [[ ${MUSTER_CCACHE:-1} != 0 ]] && command -v ccache >/dev/null 2>&1; then
  LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
    -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=true
  # One cache for five configurations (regular, Release, ASan, TSan, fuzz).
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
fi
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" "${GENERATOR[@]}" -DMUSTER_WERROR=ON "${LAUNCHER[@]}" "${OPTIONS[@]}"
elif ((${#OPTIONS[@]} > 0)) || ! grep -q '^MUSTER_WERROR:BOOL=ON$' "$BUILD_DIR/CMakeCache.txt"; then
  cmake "$BUILD_DIR" -DMUSTER_WERROR=ON "${OPTIONS[@]}"
fi
cmake --build "$BUILD_DIR" --parallel "$(nproc)" ${TARGETS[@]:+--target "${TARGETS[@]}"}
