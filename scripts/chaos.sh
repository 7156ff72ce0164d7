#!/usr/bin/env bash
# The chaos suite: a real elastic muster-train job (musterd + one agent per host,
# network namespaces as hosts when root, else loopback) under a seeded schedule of
# faults; checks the invariants after each, prints a table per fault kind and
# writes a PNG timeline. Exits 0 when every invariant held, 1 otherwise.
# Usage: scripts/chaos.sh --seed S --duration T --hosts N [--replicas R] [--loopback]
#        [--png PATH] ...   (--replicas 2+: etcd and R musterd replicas; leader_kill, leader_cut)
#   (all options: tests/fault/chaos.py --help; MUSTER_SKIP_BUILD=1 skips deps and build)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ "${MUSTER_SKIP_BUILD:-0}" != 1 ]]; then
  # With the test packages: nftables is what the partition fault needs.
  "$ROOT/scripts/install-deps.sh" >/dev/null
  "$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null
fi
exec /usr/bin/python3 "$ROOT/tests/fault/chaos.py" "$@"
