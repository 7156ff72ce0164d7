#!/usr/bin/env bash
# Launch overhead benchmark: muster vs torchrun, 4 x /bin/true, alternated runs.
# Usage: scripts/bench/launch.sh [--runs N] [--nproc N]
# Targets: muster at least 50x faster than torchrun, muster peak RSS <= 16 MiB.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
"$ROOT/scripts/install-deps.sh" >/dev/null
"$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null
exec /usr/bin/python3 "$ROOT/scripts/bench/launch_bench.py" "$@"
