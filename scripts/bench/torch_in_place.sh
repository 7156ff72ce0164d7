#!/usr/bin/env bash
# In-place recovery of a real PyTorch DDP script (examples/torch/ddp_in_place.py, the muster
# package) vs muster --recovery restart (warm, cold) and torchrun, alternated runs, medians,
# min-max, ratios and the in-place phase breakdown; plus the module's per-step overhead.
# Usage: scripts/bench/torch_in_place.sh [worker-kill|agent-kill|node-join|overhead|all] [--runs N]
#          [--torch 2.14|1.13] [--columns ...] [--torch-chroot DIR] [--keep] ...
#   (all options: scripts/bench/torch_in_place.py --help; MUSTER_SKIP_BUILD=1 skips the build)
# torch 2.14 (the default) needs root and the chroot from scripts/torch_chroots.sh.
# Targets (in place): worker-kill p50 <= 0.3 s, <= 1 step redone, survivors' pids kept;
# agent-kill p50 <= 0.6 s; node-join p50 <= 0.5 s; overhead <= 2 %.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ "${MUSTER_SKIP_BUILD:-0}" != 1 ]]; then
  "$ROOT/scripts/install-deps.sh" >/dev/null
  "$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null
fi
exec /usr/bin/python3 "$ROOT/scripts/bench/torch_in_place.py" "$@"
