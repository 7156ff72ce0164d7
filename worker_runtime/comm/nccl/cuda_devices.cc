#include "worker_runtime/comm/nccl/cuda_devices.h"

#include <cuda_runtime_api.h>

namespace muster::runtime {

int VisibleCudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    // Clear the sticky "last error" so later CUDA calls do not report it.
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace muster::runtime
