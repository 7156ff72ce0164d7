#include "worker_runtime/train/replica_factory.h"

#include "worker_runtime/train/cpu_replica.h"

#if MUSTER_HAVE_NCCL
#include "worker_runtime/comm/nccl/cuda_devices.h"
#include "worker_runtime/train/gpu/gpu_replica.h"
#endif

namespace muster::train {

Result<std::unique_ptr<ModelReplica>> CreateReplica(runtime::Communicator& comm,
                                                    const runtime::Context& ctx,
                                                    const ReplicaOptions& options) {
  if (comm.backend() == runtime::Backend::kNccl) {
#if MUSTER_HAVE_NCCL
    // The communicator was created without an explicit device, so it took
    // the default one; the buffers it reduces must be there too.
    return gpu::GpuReplica::Create(comm, runtime::DefaultCudaDevice(ctx.local_rank), options);
#else
    (void)ctx;
    return Status::FailedPrecondition("muster-train: an NCCL communicator in a build without CUDA");
#endif
  }
  return std::unique_ptr<ModelReplica>(new CpuReplica(comm, options));
}

}  // namespace muster::train
