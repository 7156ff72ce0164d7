#!/usr/bin/env bash
# What SLURM 22.05 puts in a task's environment, and what srun does when a task
# dies: runs the scenarios below on a cluster from cluster.sh and prints, per
# task, the variables muster cares about (unset ones are left out).
#
#   scripts/slurm/cluster.sh up /tmp/slurm
#   scripts/slurm/probe_env.sh /tmp/slurm
#   scripts/slurm/cluster.sh down /tmp/slurm
#
# The findings are summarized in scripts/slurm/README.md.
set -uo pipefail

DIR=${1:?usage: $0 DIR (a cluster started with cluster.sh up DIR)}
HERE=$(cd "$(dirname "$0")" && pwd)
C=("$HERE/cluster.sh" exec "$DIR")
WORK=$(mktemp -d "$DIR/probe.XXXXXX")
chmod 755 "$WORK"

VARS='SLURM_JOB_ID|SLURM_JOBID|SLURM_STEP_ID|SLURM_STEPID|SLURM_NODEID|SLURM_NNODES|SLURM_JOB_NUM_NODES|SLURM_STEP_NUM_NODES|SLURM_STEP_NUM_TASKS|SLURM_NTASKS|SLURM_NPROCS|SLURM_NODELIST|SLURM_JOB_NODELIST|SLURM_STEP_NODELIST|SLURM_STEP_GPUS|SLURM_JOB_GPUS|CUDA_VISIBLE_DEVICES|GPU_DEVICE_ORDINAL|SLURM_GPUS_PER_TASK|SLURM_GPUS_ON_NODE|SLURM_LOCALID|SLURM_PROCID|SLURM_RESTART_COUNT|SLURMD_NODENAME|SLURM_TOPOLOGY_ADDR|SLURM_TASKS_PER_NODE|SLURM_NTASKS_PER_NODE|SLURM_STEP_TASKS_PER_NODE|SLURM_JOB_CPUS_PER_NODE'
cat >"$WORK/dump.sh" <<EOF
#!/bin/sh
# prints LABEL then the watched variables of this process, one line
printf '%s ' "\$1"
env | grep -E '^($VARS)=' | sort | tr '\n' ' '
echo
EOF
chmod +x "$WORK/dump.sh"
DUMP=$WORK/dump.sh

section() { printf '\n== %s\n' "$*"; }

section "(a) srun -N3 --ntasks-per-node=1"
"${C[@]}" srun -N3 --ntasks-per-node=1 "$DUMP" task | sort

section "(b) srun -N2 --ntasks-per-node=1 --gres=gpu:2"
"${C[@]}" srun -N2 --ntasks-per-node=1 --gres=gpu:2 "$DUMP" task | sort

section "(c) sbatch -N3 --wait: the batch script, then an srun inside it"
cat >"$WORK/batch.sh" <<EOF
#!/bin/sh
$DUMP batch-script
srun --ntasks-per-node=1 $DUMP srun-in-batch | sort
EOF
"${C[@]}" sbatch -N3 --wait -o "$WORK/batch.out" "$WORK/batch.sh" >/dev/null
cat "$WORK/batch.out"

section "(d) srun -N3 --ntasks-per-node=2 --gpus-per-task=1"
"${C[@]}" srun -N3 --ntasks-per-node=2 --gpus-per-task=1 "$DUMP" task | sort

section "(e) salloc -N2, the command salloc runs (no srun), then an srun in it"
"${C[@]}" salloc -N2 sh -c "$DUMP salloc-shell; srun $DUMP srun-in-salloc | sort" 2>/dev/null

section "(f) two concurrent jobs, each -N3 --gres=gpu:2 on the same nodes"
first_job=$("${C[@]}" sbatch --parsable -N3 --gres=gpu:2 -o "$WORK/first.out" --wrap "srun --ntasks-per-node=1 $DUMP first-job | sort; sleep 30")
for _ in $(seq 100); do [[ -s $WORK/first.out ]] && break; sleep 0.1; done
"${C[@]}" srun -N3 --ntasks-per-node=1 --gres=gpu:2 "$DUMP" second-job | sort
cat "$WORK/first.out"
"${C[@]}" scancel --full --quiet "${first_job%%;*}"

# Runs die.sh on 3 nodes with srun FLAGS; prints srun's exit code, time and output.
run_die() {
  local flags=$1 start out rc elapsed
  start=$EPOCHREALTIME
  # shellcheck disable=SC2086
  out=$("${C[@]}" srun -N3 --ntasks-per-node=1 $flags "$WORK/die.sh" 2>&1)
  rc=$?
  elapsed=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  echo "-- srun ${flags:-(no flags)}: exit $rc after ${elapsed}s"
  sed 's/^/   /' <<<"$out"
}

section "(g) one of three tasks SIGKILLs itself after 1 s; the others sleep 6 s"
cat >"$WORK/die.sh" <<'EOF'
#!/bin/sh
if [ "$SLURM_PROCID" = 2 ]; then sleep 1; kill -9 $$; fi
sleep 6
echo "task $SLURM_PROCID survived"
EOF
chmod +x "$WORK/die.sh"
for flags in "" "--kill-on-bad-exit=0" "--no-kill" "--kill-on-bad-exit=0 --no-kill" "--kill-on-bad-exit=1"; do
  run_die "$flags"
done

section "(h) task 2 exits 3 after 1 s (no signal); the others sleep 6 s"
sed -i 's/kill -9 \$\$/exit 3/' "$WORK/die.sh"
for flags in "" "--kill-on-bad-exit=0 --no-kill" "--kill-on-bad-exit=1"; do
  run_die "$flags"
done
