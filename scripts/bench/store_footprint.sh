#!/usr/bin/env bash
# What torch's init_process_group stores in the worker store per rank (keys, key+value bytes),
# on torch 1.13 (host), 2.6 and 2.14 (trixie and sid chroots), with the fit to 100,000 ranks.
# Usage: scripts/bench/store_footprint.sh [--world-sizes 2,4,8,16] [--torch 1.13,2.6,2.14]
#        [--torch-chroots DIR] [--two-nodes] [--json FILE]
#   (MUSTER_SKIP_BUILD=1 skips the build; torch 2.x needs root and scripts/torch_chroots.sh's chroots)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ "${MUSTER_SKIP_BUILD:-0}" != 1 ]]; then
  "$ROOT/scripts/install-deps.sh" >/dev/null
  "$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null
fi
exec /usr/bin/python3 "$ROOT/scripts/bench/store_footprint.py" "$@"
