#!/usr/bin/env bash
# Installs what is missing, builds muster and runs real jobs on the embedded
# defaults: `muster --standalone` with 2 muster-train workers (an MLP trained
# data-parallel on CPU with libmuster_runtime's Gloo communicator),
# then 3 PyTorch workers that train a small model with DistributedDataParallel
# over gloo through muster's worker store; then the same kind of job with a
# worker SIGKILLed mid-run, recovered by a warm restart and in place (the
# muster package), with the time to every rank stepping again; and how to
# watch a job on musterd's live status page.
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

echo "== a worker SIGKILLed mid-run: examples/torch/ddp_in_place.py, 3 workers, rank 1 killed at step 12"
echo "   (scripts/bench/torch_in_place.py worker-kill: a warm restart from the checkpoint, then in place)"
/usr/bin/python3 "$ROOT/scripts/bench/torch_in_place.py" worker-kill --runs 1 --torch 1.13 \
  --columns restart,in-place | grep -E '^\| (column|muster)|^target'

echo "== a live status page, in three lines:"
echo "   $ROOT/build/bin/musterd --port 29400 --metrics-port 8080 &"
echo "   $ROOT/build/bin/muster --nnodes 1:2 --rdzv-backend muster --rdzv-endpoint localhost:29400 --nproc-per-node 2 \\"
echo "       $ROOT/examples/torch/ddp_in_place.py --steps 2000 --log /tmp/steps.log --sleep 0.05   # then open http://localhost:8080/"
