// Context: who this worker is, read once at start from the environment.
//
// Sources, in order:
//   1. torchrun's variables (set by muster or torchrun). Present when any of
//      RANK, WORLD_SIZE, LOCAL_RANK is set, or MASTER_ADDR / MASTER_PORT are
//      set outside SLURM (under SLURM those two only refine source 2).
//      Required: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT. LOCAL_RANK
//      defaults to RANK and LOCAL_WORLD_SIZE to WORLD_SIZE (one node, as with
//      launchers that predate them). TORCHELASTIC_RESTART_COUNT is the
//      generation (default 0), TORCHELASTIC_RUN_ID the run id (may be absent).
//   2. SLURM's, for `srun` launching workers directly; present when
//      SLURM_PROCID is set. Required: SLURM_PROCID (rank), SLURM_NTASKS
//      (world size), SLURM_LOCALID (local rank), SLURM_JOB_ID (run id).
//      Local world size: SLURM_NTASKS_PER_NODE, else this node's entry
//      (SLURM_NODEID, default the first) of SLURM_TASKS_PER_NODE ("2(x3),1").
//      Master address: MASTER_ADDR if set, else the first host of
//      SLURM_JOB_NODELIST ("n[1-3,7]" -> "n1", zero padding kept). Master
//      port: MASTER_PORT if set, else 20000 + SLURM_JOB_ID % 12768
//      (slurm_lists.h). Generation: SLURM_RESTART_COUNT (default 0).
//   3. neither: a single process (rank 0 of 1, master 127.0.0.1, port 0).
// A variable that is missing from a present set, not a number, or
// contradicting another is an error (InvalidArgument) whose one-line message
// names the variable and quotes its value:
//   "RANK='x' is not a non-negative integer", "RANK=4 is not below
//   WORLD_SIZE=4", "MASTER_PORT='70000' is not a port",
//   "SLURM_JOB_NODELIST='n[3-' is not a node list",
//   "torchrun variable MASTER_ADDR is not set".
//
// Thread-safety: a value type; FromEnv reads only through `env`.
#pragma once

#include <cstdint>
#include <string>

#include "common/env_lookup.h"
#include "common/status.h"

namespace muster::runtime {

struct Context {
  enum class Source { kTorchrun, kSlurm, kSingleProcess };

  Source source = Source::kSingleProcess;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: single process, no store needed
  std::string run_id;   // TORCHELASTIC_RUN_ID or SLURM_JOB_ID; may be empty
  // Distinguishes the job's generations (restarts, membership changes): every
  // store key of this process lives under StoreNamespace().
  int64_t generation = 0;
  // Whether rank 0 serves the store at master_port itself: with SLURM
  // (srun starts the workers, no launcher hosts a store) and under torchrun
  // when TORCHELASTIC_USE_AGENT_STORE is false, as torch's env:// does. Unset
  // TORCHELASTIC_USE_AGENT_STORE means a launcher's store, as muster's.
  bool rank0_hosts_store = false;

  static Result<Context> FromEnv(const EnvLookup& env);
  // FromEnv(the process environment).
  static Result<Context> FromProcessEnv();

  // "muster/<generation>/": the store key prefix of this generation.
  std::string StoreNamespace() const;
  static const char* SourceName(Source source);
};

}  // namespace muster::runtime
