#!/usr/bin/env bash
# Installs what is missing, builds muster and runs a real job on the embedded
# defaults: `muster --standalone` with 3 PyTorch workers that train a small
# model with DistributedDataParallel over gloo (all_reduce, broadcast,
# barrier, DistributedSampler) through muster's worker store.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

scripts/install-deps.sh
scripts/build.sh "$ROOT/build"

echo "== muster --standalone --nproc-per-node 3 tests/torch/ddp_gloo.py"
MUSTER_PYTHON=/usr/bin/python3 "$ROOT/build/bin/muster" --standalone --nproc-per-node 3 \
  "$ROOT/tests/torch/ddp_gloo.py" --epochs 2
