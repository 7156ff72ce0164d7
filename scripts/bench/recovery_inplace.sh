#!/usr/bin/env bash
# Worker SIGKILL mid-training, one node, P workers (default 4), CPU/Gloo: muster
# --recovery in-place vs muster --recovery restart from a checkpoint vs torchrun 1.13
# restarting a torch DDP trainer from its checkpoint. Measures the time until every rank
# steps again, the steps redone and the processes restarted; checks muster's final weights
# against a fault-free run.
# Target (in-place): every rank stepping again <= 150 ms (p50); steps redone <= 1; one
# process restarted.
# Usage: scripts/bench/recovery_inplace.sh [--runs N] [--nproc P] [--kill-step K]
#        [--checkpoint-every C] [--steps S] [--step-sleep-ms MS] [--torchrun 1.13|none]
#   (all options: scripts/bench/recovery_inplace.py --help; MUSTER_SKIP_BUILD=1 skips the build)
# Defaults (5 runs) take about 1.5 minutes.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ "${MUSTER_SKIP_BUILD:-0}" != 1 ]]; then
  "$ROOT/scripts/install-deps.sh" >/dev/null
  "$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null
fi
exec /usr/bin/python3 "$ROOT/scripts/bench/recovery_inplace.py" "$@"
