// SLURM as a source of flag values: `srun --ntasks-per-node=1 muster ...`
// runs one agent per node of the step, and each derives from the step's
// variables what a torchrun user would otherwise type on every node:
//
//   nnodes          SLURM_STEP_NUM_NODES, else SLURM_NNODES, else SLURM_JOB_NUM_NODES
//   node-rank       SLURM_NODEID (used by --rdzv-backend static)
//   rdzv-backend    muster: the elastic rendezvous, hosted by node 0's agent
//   rdzv-endpoint   FIRST:PORT; FIRST is the first host of SLURM_STEP_NODELIST
//                   (else SLURM_JOB_NODELIST), PORT is SlurmRendezvousPort()
//   rdzv-id         JOB.STEP (SLURM_JOB_ID, SLURM_STEP_ID)
//   nproc-per-node  gpu, when CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS or
//                   SLURM_JOB_GPUS names GPUs
//
// These are the lowest-precedence values: the command line, PET_* variables
// and the --config file all win. A user who sets --master-addr or
// --master-port asks for torchrun's static setup, so then neither the backend
// nor the endpoint is derived.
//
// Thread-safety: pure; reads the environment only through `env`.
#pragma once

#include <cstdint>

#include "common/env_lookup.h"
#include "common/status.h"
#include "launcher/cli/raw_settings.h"

namespace muster::cli {

struct SlurmSettings {
  bool in_step = false;  // false: not inside an srun step, `settings` is empty
  RawSettings settings;  // origins name the variables ("SLURM_NNODES")
  int node_id = 0;       // SLURM_NODEID: node 0's agent hosts the rendezvous
};

// The step this process runs in, from `env`. Outside a step (no SLURM_JOB_ID,
// or no SLURM_STEP_ID: a batch script, an salloc shell) returns in_step false.
// Fails with one line naming the variable when a variable that is used is
// malformed, or when the step runs more than one task per node (muster is one
// agent per node: `srun --ntasks-per-node=1`).
Result<SlurmSettings> ReadSlurmSettings(const EnvLookup& env);

// The rendezvous port of a job step, the same on every node of the step and
// different for the steps of one job and for neighbouring jobs:
// 20000 + (64 * job_id + step_id % 64 + 1) % 12768, so within 20000..32767,
// below the kernel's ephemeral ports.
int SlurmRendezvousPort(uint64_t job_id, uint64_t step_id);

}  // namespace muster::cli
