// WorkerFaults: the faults of muster's --inject plan that fire inside a
// worker (common/fault_spec.h): exit-worker and corrupt-checkpoint. The agent
// hands the plan down in MUSTER_INJECT, MUSTER_INJECT_SEED and
// MUSTER_INJECT_FIRED (the worker faults that already fired on this node, so
// a restarted worker does not fire them again). Without MUSTER_INJECT there
// is nothing to do and every call is a test of an empty list.
//
// A fault that fires is first told to the agent on the progress pipe
// ("inject N", which the agent logs and remembers) and on stderr.
//
//   auto faults = WorkerFaults::FromProcessEnv(ctx.rank, ctx.world_size);
//   ... after each step:  faults->AtStep(step, progress);   // may not return
//   ... after a checkpoint of `step` was written to `path`:
//   if (faults->CorruptsCheckpointAt(step, progress)) DamageFile(path);
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/env_lookup.h"
#include "common/fault_spec.h"
#include "common/status.h"
#include "worker_runtime/progress/progress_reporter.h"

namespace muster::runtime {

class WorkerFaults {
 public:
  WorkerFaults() = default;
  // This worker's faults: exit-worker aimed at `rank` (rank=any drawn among
  // `world_size`) and, on rank 0 (the checkpoint writer), corrupt-checkpoint.
  // Errors: InvalidArgument naming the variable when the plan, the seed or
  // the fired list is malformed.
  static Result<WorkerFaults> FromEnv(const EnvLookup& env, int rank, int world_size);
  static Result<WorkerFaults> FromProcessEnv(int rank, int world_size);

  // When an exit-worker fault is due at `step`: reports it and exits the
  // process with its code (after flushing stdio). Otherwise returns.
  void AtStep(uint64_t step, const ProgressReporter& progress);
  // True (once) when the checkpoint of `step` is to be corrupted; reports it.
  bool CorruptsCheckpointAt(uint64_t step, const ProgressReporter& progress);

 private:
  std::vector<FaultSpec> pending_;
};

// Flips one byte in the middle of `path`, so its checksum no longer holds
// (silent corruption of a written file). Errors: IoError naming the path.
Status DamageFile(const std::string& path);

}  // namespace muster::runtime
