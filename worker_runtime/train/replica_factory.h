// CreateReplica: the ModelReplica (replica.h) that fits the communicator's
// backend. NCCL: a GpuReplica (gpu/gpu_replica.h) on the communicator's
// device. Gloo, or the one-rank host communicator: a CpuReplica
// (cpu_replica.h).
//
// Errors: IoError when the GPU replica cannot be set up (the message names
// the device and the CUDA or cuBLAS call); FailedPrecondition for an NCCL
// communicator in a build without the GPU path (not expected: such a build
// never creates one).
// REQUIRES: `comm` outlives the replica.
#pragma once

#include <memory>

#include "common/status.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/train/replica.h"

namespace muster::train {

Result<std::unique_ptr<ModelReplica>> CreateReplica(runtime::Communicator& comm,
                                                    const ReplicaOptions& options);

}  // namespace muster::train
