#!/usr/bin/env bash
# Warm workers on an unmodified PyTorch DDP script (scripts/bench/torch_ddp_ckpt.py):
# muster warm / muster --no-warm-workers vs torchrun 1.13 (host) and 2.14 (sid chroot),
# alternated runs, medians, min-max, ratios and a per-phase breakdown.
# Usage: scripts/bench/torch_recovery.sh [worker-kill|agent-kill|first-step|all] [--runs N]
#          [--torchrun 1.13,2.14] [--torch-chroot DIR] [--musterd] [--nprocs 4,8] ...
#   (all options: scripts/bench/torch_recovery.py --help; MUSTER_SKIP_BUILD=1 skips the build)
# torchrun 2.14 needs root and the chroot from scripts/torch_chroots.sh.
# Targets: worker-kill muster warm p50 <= 0.8 s and >= 5x faster than each torchrun;
# agent-kill muster warm p50 <= 1.2 s; first-step warm >= 2x faster than cold and torchrun 2.14.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ "${MUSTER_SKIP_BUILD:-0}" != 1 ]]; then
  "$ROOT/scripts/install-deps.sh" >/dev/null
  "$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null
fi
exec /usr/bin/python3 "$ROOT/scripts/bench/torch_recovery.py" "$@"
