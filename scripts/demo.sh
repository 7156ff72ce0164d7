#!/usr/bin/env bash
# Installs what is missing, builds muster and runs real jobs on the embedded
# defaults: `muster --standalone` with 2 muster-train workers (an MLP trained
# data-parallel on CPU with libmuster_runtime's Gloo communicator),
# then 3 PyTorch workers that train a small model with DistributedDataParallel
# over gloo through muster's worker store.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

scripts/install-deps.sh
scripts/build.sh "$ROOT/build"

# --backend gloo: the demo trains on CPU on every machine (two workers on a
# machine with one GPU could not both train on it over NCCL).
echo "== muster --standalone --nproc-per-node 2 muster-train --backend gloo --steps 100"
"$ROOT/build/bin/muster" --standalone --nproc-per-node 2 --no-python "$ROOT/build/bin/muster-train" \
  --backend gloo --steps 100 --log-every 20

echo "== muster --standalone --nproc-per-node 3 tests/torch/ddp_gloo.py"
MUSTER_PYTHON=/usr/bin/python3 "$ROOT/build/bin/muster" --standalone --nproc-per-node 3 \
  "$ROOT/tests/torch/ddp_gloo.py" --epochs 2
