#!/usr/bin/env bash
# Detection and recovery after a node fault: muster (musterd) vs torchrun's c10d rendezvous,
# torchrun 1.13 (host) and 2.14 (sid chroot, needs root).
# Usage: scripts/bench/recovery.sh [--runs N] [--torchrun 1.13,2.14] [--torchrun-runs N] [--window S]
#        [--faults LIST] ...
#   (all options: scripts/bench/rdzv_recovery.py --help; MUSTER_SKIP_BUILD=1 skips the build)
# Faults: agent kill -9, agent SIGSTOP, link down (network namespaces; needs root).
# Targets for muster, fault -> new generation: <= 0.25 s, <= 1.5 s, <= 1.5 s (+ worker start-up).
# Defaults take about 12 minutes: 5 muster runs per fault, each torchrun 2 runs per loopback
# fault and 1 for link down, each watched 60 s; `--faults kill-9` about 6 minutes.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ "${MUSTER_SKIP_BUILD:-0}" != 1 ]]; then
  "$ROOT/scripts/install-deps.sh" >/dev/null
  "$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null
fi
exec /usr/bin/python3 "$ROOT/scripts/bench/rdzv_recovery.py" "$@"
