#!/usr/bin/env bash
# Launch overhead benchmark: muster vs torchrun 1.13 (host) and 2.14 (sid chroot),
# 4 x /bin/true, alternated runs.
# Usage: scripts/bench/launch.sh [--runs N] [--nproc N] [--torchrun 1.13,2.14] [--torch-chroot DIR]
#   (all options: scripts/bench/launch_bench.py --help; MUSTER_SKIP_BUILD=1 skips the build)
# torchrun 2.14 needs root and the chroot from scripts/torch_chroots.sh.
# Targets: muster at least 50x faster than each torchrun, muster peak RSS <= 16 MiB.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ "${MUSTER_SKIP_BUILD:-0}" != 1 ]]; then
  "$ROOT/scripts/install-deps.sh" >/dev/null
  "$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null
fi
exec /usr/bin/python3 "$ROOT/scripts/bench/launch_bench.py" "$@"
