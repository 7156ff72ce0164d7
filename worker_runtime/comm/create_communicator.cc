// CreateCommunicator: resolves the backend (backend_choice.h), then builds it;
// and what every Communicator shares by default.
#include "worker_runtime/comm/backend_choice.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/comm/gloo/gloo_communicator.h"
#include "worker_runtime/comm/solo_communicator.h"

#if MUSTER_HAVE_NCCL
#include "worker_runtime/comm/nccl/cuda_devices.h"
#include "worker_runtime/comm/nccl/nccl_communicator.h"
#endif

namespace muster::runtime {

Result<Backend> ResolveBackendHere(Backend requested) {
#if MUSTER_HAVE_NCCL
  // Only probe the GPUs when the answer matters: probing loads the driver.
  const int gpus = requested == Backend::kGloo ? 0 : VisibleCudaDeviceCount();
  return ResolveBackend(requested, true, gpus);
#else
  return ResolveBackend(requested, false, 0);
#endif
}

Result<std::unique_ptr<Communicator>> Communicator::Shrink(const std::vector<int>& /*excluded*/) {
  return Status::InvalidArgument(std::string("comm: the ") + BackendName(backend()) +
                                 " communicator cannot shrink");
}

Result<std::unique_ptr<Communicator>> CreateCommunicator(const Context& ctx, StoreClient* store,
                                                         const CommOptions& options) {
  if (options.timeout.count() <= 0) {
    return Status::InvalidArgument("comm: timeout " + std::to_string(options.timeout.count()) +
                                   " ms is not positive");
  }
  Result<Backend> backend = ResolveBackendHere(options.backend);
  // Checked before the world size, so a request this build or machine cannot
  // serve fails alike at one rank and at many.
  if (!backend.ok()) return backend.status();
  // Solo works on host memory; a one-rank NCCL job keeps device semantics.
  if (ctx.world_size == 1 && *backend == Backend::kGloo) {
    return std::unique_ptr<Communicator>(new SoloCommunicator());
  }
  if (store == nullptr && ctx.world_size > 1) {
    return Status::InvalidArgument("comm: world size " + std::to_string(ctx.world_size) +
                                   " needs a store for the rendezvous, none was given");
  }
#if MUSTER_HAVE_NCCL
  if (*backend == Backend::kNccl) return NcclCommunicator::Create(ctx, store, options);
#endif
  return GlooCommunicator::Create(ctx, *store, options);
}

}  // namespace muster::runtime
