#!/usr/bin/env bash
# musterd replicas through etcd: time from the leader's SIGKILL or SIGTERM to a standby
# leading. (Agents following the new leader are not measured yet: they do not follow.)
# Usage: scripts/bench/failover.sh [--runs N] [--replicas R] [--etcd-members M] [--bin-dir DIR]
#   (MUSTER_SKIP_BUILD=1 skips the build; needs Debian's etcd-server, which
#   scripts/install-deps.sh installs)
# Defaults (10 runs, 3 replicas, 1 etcd member) take about half a minute.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ "${MUSTER_SKIP_BUILD:-0}" != 1 ]]; then
  "$ROOT/scripts/install-deps.sh" >/dev/null
  "$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null
fi
exec /usr/bin/python3 "$ROOT/scripts/bench/failover.py" "$@"
