#!/usr/bin/env bash
# Worker SIGKILL -> all local workers restarted: muster vs torchrun (Debian torch 1.13).
# Usage: scripts/bench/worker_restart.sh [--runs N] [--nproc P]  (MUSTER_SKIP_BUILD=1 skips the build)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ "${MUSTER_SKIP_BUILD:-0}" != 1 ]]; then
  "$ROOT/scripts/install-deps.sh" >/dev/null
  "$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null
fi
exec /usr/bin/python3 "$ROOT/scripts/bench/worker_restart.py" "$@"
