// Which backend a CommOptions::backend request resolves to, given what this
// build has and what the machine shows. Pure: the caller probes the GPUs.
//
//   kAuto -> kNccl when built with NCCL and at least one GPU is visible,
//            else kGloo (a CUDA build on a machine without a driver sees 0).
//   kGloo -> kGloo always.
//   kNccl -> kNccl, or an InvalidArgument error naming the reason
//            ("--backend nccl: this build has no NCCL" / "... no GPU is visible").
//
// Thread-safety: a pure function.
#pragma once

#include "common/status.h"
#include "worker_runtime/comm/communicator.h"

namespace muster::runtime {

Result<Backend> ResolveBackend(Backend requested, bool built_with_nccl, int visible_gpus);

}  // namespace muster::runtime
