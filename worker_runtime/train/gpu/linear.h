// The MLP's linear layers on a GPU: cuBLAS sgemm for the products and the
// kernels of kernels.h for the bias, with cpu_kernels.h's math and layout
// (row-major, weights input-major [in][out]) in float32. cuBLAS sums in
// float where the CPU's weight gradient sums in double: results agree to
// float rounding.
//
//   Blas blas(stream.get());
//   LinearForward(blas, x, w, bias, z, batch, in, out);
//
// Errors: every function throws DeviceError naming the cuBLAS call or kernel
// that failed to start; work runs asynchronously on the Blas's stream.
// REQUIRES: device pointers of the current device; batch, in and out each
// fit an int (cuBLAS's dimensions).
// Thread-safety: a Blas is used by one thread at a time.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace muster::train::gpu {

// An owned cuBLAS handle whose work goes to `stream`, in pedantic math mode:
// float32 products stay float32 (no TF32 or reduced-precision emulation,
// whatever the environment asks), to match the CPU path.
class Blas {
 public:
  // Throws DeviceError when the handle cannot be created or configured.
  explicit Blas(cudaStream_t stream);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  cublasHandle_t handle() const { return handle_; }
  cudaStream_t stream() const { return stream_; }

 private:
  cublasHandle_t handle_ = nullptr;
  cudaStream_t stream_;
};

// z[b][o] = bias[o] + sum_i x[b][i] * w[i][o]
void LinearForward(Blas& blas, const float* x, const float* w, const float* bias, float* z,
                   size_t batch, size_t in, size_t out);
// dw[i][o] = sum_b x[b][i] * dz[b][o];  dbias[o] = sum_b dz[b][o]
// (overwritten, not accumulated).
void LinearWeightGrad(Blas& blas, const float* x, const float* dz, float* dw, float* dbias,
                      size_t batch, size_t in, size_t out);
// dx[b][i] = sum_o dz[b][o] * w[i][o]
void LinearInputGrad(Blas& blas, const float* dz, const float* w, float* dx, size_t batch,
                     size_t in, size_t out);

}  // namespace muster::train::gpu
