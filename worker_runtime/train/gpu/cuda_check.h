// Failed CUDA runtime and cuBLAS calls as DeviceError (replica.h), whose
// message names the call and CUDA's reason:
//   CheckCuda(cudaMalloc(&p, bytes), "cudaMalloc(gradients)");
//   -> DeviceError "cudaMalloc(gradients): out of memory"
//
// Thread-safety: stateless.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string_view>

namespace muster::train::gpu {

// Throws DeviceError "<call>: <cudaGetErrorString(rc)>" unless rc is cudaSuccess.
void CheckCuda(cudaError_t rc, std::string_view call);
// Throws DeviceError "<call>: <cublasGetStatusString(rc)>" unless rc is
// CUBLAS_STATUS_SUCCESS.
void CheckCublas(cublasStatus_t rc, std::string_view call);

}  // namespace muster::train::gpu
