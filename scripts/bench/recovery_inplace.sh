#!/usr/bin/env bash
# Worker SIGKILL mid-training (the default, --fault worker-kill), one node, P workers
# (default 4), CPU/Gloo: muster --recovery in-place vs muster --recovery restart from a
# checkpoint vs torchrun 1.13 restarting a torch DDP trainer from its checkpoint. Measures
# the time until every rank steps again, the steps redone and the processes restarted;
# checks muster's final weights against a fault-free run.
# Target (in-place): every rank stepping again <= 150 ms (p50); steps redone <= 1; one
# process restarted.
# --fault agent-kill|agent-stop|node-join: two muster agents on loopback forming one elastic
# job (--nnodes 1:2, 2 workers each): the second agent SIGKILLed or SIGSTOPped mid-run, or
# joining mid-run; in-place vs restart (checkpoints), alternated; final weights checked
# against a fault-free one-agent run; torchrun is not measured for these. Targets (in-place):
# agent SIGKILL every rank stepping again <= 300 ms (p50), steps redone <= 1, survivors'
# processes unchanged; agent SIGSTOP steps redone <= 1, survivors' processes unchanged; node
# joining: joiner stepping <= 500 ms after its round closes (p50), first node's processes
# unchanged.
# --fault link-down (root): as agent-kill, but the second agent and its workers run in a
# network namespace of their own behind a veth pair, and the fault is that veth set down on
# the second node's side (silent: no RST; the daemon declares the node dead after 1.25 s);
# the lost node's processes are killed by pid, the veth and namespace deleted. Target
# (in-place): steps redone <= 1, survivors' processes unchanged.
# Usage: scripts/bench/recovery_inplace.sh
#        [--fault worker-kill|agent-kill|agent-stop|node-join|link-down] [--runs N]
#        [--nproc P] [--kill-step K] [--checkpoint-every C] [--steps S]
#        [--step-sleep-ms MS] [--torchrun 1.13|none]
#   (all options: scripts/bench/recovery_inplace.py --help; MUSTER_SKIP_BUILD=1 skips the build,
#   MUSTER_BIN_DIR=DIR runs the binaries in DIR instead of build/bin)
# Defaults (5 runs) take about 1.5 minutes; --fault agent-kill or agent-stop about 1 minute,
# node-join about 2 minutes, link-down about 1 minute.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ "${MUSTER_SKIP_BUILD:-0}" != 1 ]]; then
  "$ROOT/scripts/install-deps.sh" >/dev/null
  "$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null
fi
exec /usr/bin/python3 "$ROOT/scripts/bench/recovery_inplace.py" "$@"
