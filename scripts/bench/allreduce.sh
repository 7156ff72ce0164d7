#!/usr/bin/env bash
# Allreduce bandwidth: the runtime's Gloo communicator versus torch.distributed
# gloo (Debian python3-torch), float32 sum, 2 and 4 ranks on loopback, 1 KB to
# 256 MB. Prints a table per world size (size, muster GB/s, torch GB/s, ratio)
# and writes allreduce.csv and allreduce.png to OUT_DIR.
# Exit 1 when muster is below 1.0x torch at any size >= 1 MB.
#
# Usage: scripts/bench/allreduce.sh [BUILD_DIR [OUT_DIR]]
#   BUILD_DIR  a configured build (default: build); allreduce_bench_worker is
#              built there first
#   OUT_DIR    default: BUILD_DIR/bench/allreduce
# Env: WORLDS (default "2,4"), SIZES (bytes, comma-separated; default 1 KB..256 MB
#      in powers of 4), ROUNDS (alternating muster/torch runs, best median
#      counts; default 3), MUSTER_GLOO_ALLREDUCE (force one Gloo algorithm).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
out="$(mkdir -p "${2:-$build/bench/allreduce}" && cd "${2:-$build/bench/allreduce}" && pwd)"

# The benchmark helpers are built only where asked for (MUSTER_BUILD_BENCHMARKS).
cmake "$build" -DMUSTER_BUILD_BENCHMARKS=ON >/dev/null
cmake --build "$build" --target allreduce_bench_worker >/dev/null
args=(--build-dir "$build" --out-dir "$out" --worlds "${WORLDS:-2,4}" --rounds "${ROUNDS:-3}")
if [[ -n "${SIZES:-}" ]]; then args+=(--sizes "$SIZES"); fi
echo "+ /usr/bin/python3 $here/allreduce_bench.py ${args[*]}"
cd "$here"
exec /usr/bin/python3 "$here/allreduce_bench.py" "${args[@]}"
