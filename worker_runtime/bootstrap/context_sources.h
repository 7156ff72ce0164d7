// The per-source readers behind Context::FromEnv, one per launcher that can
// start a worker. Each assumes its source was detected (see context.h) and
// validates every variable it reads.
//
// Thread-safety: pure functions of `env`.
#pragma once

#include <string>

#include "common/env_lookup.h"
#include "common/status.h"
#include "worker_runtime/bootstrap/context.h"

namespace muster::runtime {

// REQUIRES: at least one torchrun variable is set (TorchrunVariablesPresent).
Result<Context> ContextFromTorchrun(const EnvLookup& env);
// REQUIRES: SLURM_PROCID is set.
Result<Context> ContextFromSlurm(const EnvLookup& env);

// Whether the worker was started with torchrun's variables rather than by
// `srun` directly; see context.h for why MASTER_* alone do not count under SLURM.
bool TorchrunVariablesPresent(const EnvLookup& env);

// The value of `name`, or an error saying which variable of `source` is
// missing: "torchrun variable WORLD_SIZE is not set".
Result<std::string> Required(const EnvLookup& env, const char* source, const std::string& name);

// The error for a rank that is not below its world size:
// "RANK=4 is not below WORLD_SIZE=4".
Status NotBelow(const char* name, int value, const char* limit_name, int limit);

// `addr`, the value of MASTER_ADDR, as the rendezvous host. Error:
// InvalidArgument "MASTER_ADDR='' is not a host" when it is empty.
Result<std::string> MasterAddr(std::string addr);

}  // namespace muster::runtime
