#include "worker_runtime/train/replica_factory.h"

#include "worker_runtime/train/cpu_replica.h"

#if MUSTER_HAVE_NCCL
#include "worker_runtime/train/gpu/gpu_replica.h"
#endif

namespace muster::train {

Result<std::unique_ptr<ModelReplica>> CreateReplica(runtime::Communicator& comm,
                                                    const ReplicaOptions& options) {
  if (comm.backend() == runtime::Backend::kNccl) {
#if MUSTER_HAVE_NCCL
    // The buffers the communicator reduces must be on its device.
    return gpu::GpuReplica::Create(comm, comm.cuda_device(), options);
#else
    return Status::FailedPrecondition("muster-train: an NCCL communicator in a build without CUDA");
#endif
  }
  return std::unique_ptr<ModelReplica>(new CpuReplica(comm, options));
}

}  // namespace muster::train
