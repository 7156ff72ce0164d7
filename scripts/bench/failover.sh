#!/usr/bin/env bash
# musterd replicas through etcd: with agents (default 3), time from the leader's SIGKILL to
# every agent on the new leader (workers restarted: should be 0), and with a node's SIGKILL
# 1 s later, to the survivors running the next generation; with --agents 0, time from the
# leader's SIGKILL or SIGTERM to a standby leading.
# Usage: scripts/bench/failover.sh [--runs N] [--replicas R] [--etcd-members M] [--agents A]
#                                  [--bin-dir DIR]
#   (MUSTER_SKIP_BUILD=1 skips the build; needs Debian's etcd-server, which
#   scripts/install-deps.sh installs)
# Defaults (10 runs, 3 replicas, 1 etcd member, 3 agents) take about two minutes.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ "${MUSTER_SKIP_BUILD:-0}" != 1 ]]; then
  "$ROOT/scripts/install-deps.sh" >/dev/null
  "$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null
fi
exec /usr/bin/python3 "$ROOT/scripts/bench/failover.py" "$@"
