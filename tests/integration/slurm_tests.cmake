# muster under SLURM: a private 3-node cluster (munged, slurmctld, three
# slurmd with fake GPUs) from tests/fixtures/slurm_cluster.sh in a mount namespace;
# the multi-node sbatch template, per-task srun of muster-train, one agent per node,
# elastic loss of a node; then agent and per-task mode again on a cluster
# whose nodes are network namespaces with their own addresses (--netns).
# Needs root and slurm-wlm + munge (else Skipped).
muster_integration_test(slurm slurm_test.py TIMEOUT 300 LABELS slurm)
