#!/usr/bin/env bash
# Launch under SLURM: time from `srun` start to ALL workers started, muster vs
# torchrun, under the same srun on the same private cluster, alternated runs.
#
# Usage: scripts/bench/slurm_launch.sh [--rounds N] [--muster PATH] [--no-c10d]
#                                      [--no-c10d-probe] [--timeout S] [--keep]
#   (all options: scripts/bench/slurm_launch_bench.py --help)
#   --rounds N   timed rounds, each runs every launcher once (default 7)
#   --muster P   muster binary (default build/bin/muster, built first unless
#                MUSTER_SKIP_BUILD=1 or --muster is given)
#   --keep       keep the temp dir (cluster logs, per-run logs and worker files)
#
# Brings up tests/fixtures/slurm_cluster.sh (SLURM 22.05, virtual nodes n1..n3 on
# this host) in a temp dir and always tears it down (trap; the cluster's
# watchdog too, should this script be SIGKILLed). 3 nodes x 2 workers; the
# worker is a bash script that appends $EPOCHREALTIME, RANK, WORLD_SIZE to a
# shared file and exits 0. Rows: muster (srun --ntasks-per-node=1 muster
# --nproc-per-node 2 --no-python W), torchrun static (node_rank
# $SLURM_NODEID, master n1), torchrun c10d (endpoint n1, is_host on node 0),
# bare `srun --ntasks-per-node=2 W` as the floor. torchrun is Debian's torch
# 1.13 via torchrun_compat.py. Prints a Markdown table: median / min-max of
# srun start -> last worker started, median srun wall, ratio vs muster.
#
# Needs root (the cluster does): otherwise prints a skip message, exits 0.
# Exits 1 when any run failed (srun non-zero, a worker missing, wrong ranks).
# Takes about 2 minutes with 7 rounds on a 2-core machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

keep=0
have_muster=0
args=()
for a in "$@"; do
  case "$a" in
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --keep) keep=1 ;;
    --muster|--muster=*) have_muster=1; args+=("$a") ;;
    *) args+=("$a") ;;
  esac
done

skip() { echo "slurm_launch.sh: SKIPPED: $*"; exit 0; }
((EUID == 0)) || skip "needs root (cluster.sh makes a mount namespace, device nodes and runs slurmd/slurmctld/munged as root)"
for cmd in /usr/sbin/slurmctld /usr/sbin/slurmd /usr/sbin/munged srun; do
  command -v "$cmd" >/dev/null || skip "'$cmd' not found (apt-get install slurm-wlm munge)"
done
/usr/bin/python3 -c 'import torch.distributed.run' 2>/dev/null ||
  skip "/usr/bin/python3 cannot import torch.distributed.run (apt-get install python3-torch)"

if ((!have_muster)) && [[ "${MUSTER_SKIP_BUILD:-0}" != 1 ]]; then
  "$ROOT/scripts/install-deps.sh" >/dev/null
  "$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null
fi

TMP=$(mktemp -d /tmp/slurm_launch.XXXXXX)
chmod 755 "$TMP"  # munged wants every directory above its socket searchable
status=1
cleanup() {
  "$ROOT/tests/fixtures/slurm_cluster.sh" down "$TMP/cluster" >/dev/null 2>&1 ||
    echo "slurm_launch.sh: cluster.sh down $TMP/cluster failed" >&2
  if ((keep)) || ((status != 0)); then
    echo "slurm_launch.sh: logs kept in $TMP" >&2
  else
    rm -rf "$TMP"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

SLURM_CLUSTER_OWNER=$$ "$ROOT/tests/fixtures/slurm_cluster.sh" up "$TMP/cluster" >"$TMP/cluster-up.log" 2>&1 || {
  cat "$TMP/cluster-up.log" >&2
  echo "slurm_launch.sh: cluster.sh up failed" >&2
  exit 1
}
head -n 1 "$TMP/cluster-up.log" >&2

rc=0
/usr/bin/python3 "$ROOT/scripts/bench/slurm_launch_bench.py" --cluster "$TMP/cluster" \
  --work "$TMP/work" ${args[@]+"${args[@]}"} || rc=$?
status=$rc
exit "$rc"
