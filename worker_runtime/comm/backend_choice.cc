#include "worker_runtime/comm/backend_choice.h"

namespace muster::runtime {

Result<Backend> ResolveBackend(Backend requested, bool built_with_nccl, int visible_gpus) {
  switch (requested) {
    case Backend::kGloo:
      return Backend::kGloo;
    case Backend::kAuto:
      return built_with_nccl && visible_gpus > 0 ? Backend::kNccl : Backend::kGloo;
    case Backend::kNccl:
      if (!built_with_nccl) {
        return Status::InvalidArgument(
            "--backend nccl: this build has no NCCL (configure with -DMUSTER_CUDA=on)");
      }
      if (visible_gpus <= 0) {
        return Status::InvalidArgument("--backend nccl: no GPU is visible (cudaGetDeviceCount=" +
                                       std::to_string(visible_gpus) + ")");
      }
      return Backend::kNccl;
  }
  return Status::InvalidArgument("--backend: unknown value");
}

}  // namespace muster::runtime
