#include "worker_runtime/train/gpu/cuda_check.h"

#include <string>

#include "worker_runtime/train/replica.h"

namespace muster::train::gpu {

void CheckCuda(cudaError_t rc, std::string_view call) {
  if (rc == cudaSuccess) return;
  // A launch or argument error stays in the runtime's "last error" too;
  // clear it so the next check reports its own call.
  (void)cudaGetLastError();
  throw DeviceError(std::string(call) + ": " + cudaGetErrorString(rc));
}

void CheckCublas(cublasStatus_t rc, std::string_view call) {
  if (rc == CUBLAS_STATUS_SUCCESS) return;
  throw DeviceError(std::string(call) + ": " + cublasGetStatusString(rc));
}

}  // namespace muster::train::gpu
