#!/usr/bin/env bash
# Re-forming a communicator in place, timed: interrupt a collective blocked on a stopped
# rank, then shrink (NCCL >= 2.27) and/or make a new communicator of the survivors;
# reference: torch 1.13's init_process_group("gloo") at the same size.
# Usage: scripts/bench/comm_reform.sh [--runs N] [--world W] [--backend gloo|nccl]
#        [--torch 1.13|none] [--bin-dir DIR]
#   (MUSTER_SKIP_BUILD=1 skips the build; --bin-dir defaults to build/tests)
# Defaults (10 runs, 3 ranks, gloo) take about half a minute.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ "${MUSTER_SKIP_BUILD:-0}" != 1 ]]; then
  "$ROOT/scripts/install-deps.sh" >/dev/null
  "$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null
fi
exec /usr/bin/python3 "$ROOT/scripts/bench/comm_reform.py" "$@"
