#!/usr/bin/env bash
# How late progress-bar updates reach the console: muster vs torchrun 1.13 (host) and 2.14 (sid chroot).
# Usage: scripts/bench/output_latency.sh [--runs N] [--updates U] [--interval S] [--nproc P] [--torch]
#        [--torchrun 1.13,2.14] [--torch-chroot DIR]
#   (MUSTER_SKIP_BUILD=1 skips the build; torchrun 2.14 needs root and scripts/torch_chroots.sh's chroot)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ "${MUSTER_SKIP_BUILD:-0}" != 1 ]]; then
  "$ROOT/scripts/install-deps.sh" >/dev/null
  "$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null
fi
exec /usr/bin/python3 "$ROOT/scripts/bench/output_latency.py" "$@"
