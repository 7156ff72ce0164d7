#!/usr/bin/env bash
# A private SLURM cluster (slurmctld, slurmd per node in network namespaces)
# for trying muster under SLURM by hand: the tests' fixture,
# tests/fixtures/slurm_cluster.sh (its header says how).
exec "$(dirname -- "$(realpath -- "${BASH_SOURCE[0]}")")/../../tests/fixtures/slurm_cluster.sh" "$@"
