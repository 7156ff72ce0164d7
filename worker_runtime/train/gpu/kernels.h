// The CUDA kernels of muster-train's GPU path: the element-wise and
// reduction steps around the cuBLAS products (linear.h), on row-major device
// matrices laid out as in cpu_kernels.h. Each function queues its kernel on
// `stream` (nothing when there is no element) and returns the launch's error
// (cudaGetLastError); errors of the execution itself surface at the next
// synchronizing call. Every reduction sums in a fixed order: results do not
// change from run to run.
//
// Compiled by nvcc as C++17 (kernels.cu); C++20 files include it too.
// REQUIRES: every pointer is device memory of the current device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace muster::train::gpu {

// z[b][o] += bias[o]
cudaError_t BiasAdd(float* z, const float* bias, size_t batch, size_t out, cudaStream_t stream);

// z = max(z, 0) in place.
cudaError_t Relu(float* z, size_t n, cudaStream_t stream);

// dx[k] = z[k] > 0 ? dx[k] : 0 (z: the pre-activation, or the ReLU output).
cudaError_t ReluGrad(const float* z, float* dx, size_t n, cudaStream_t stream);

// Per row of logits, softmax cross-entropy against labels, as
// cpu::SoftmaxCrossEntropy (in double within a row; the first maximal logit
// is the prediction). Writes the gradient (softmax - onehot) * scale into
// dlogits, then stats[0] = the sum of the rows' losses and stats[1] = the
// number of rows whose prediction is the label.
// REQUIRES: labels in [0, classes); row_scratch holds 2 * batch doubles;
// stats holds 2 doubles.
cudaError_t SoftmaxCrossEntropy(const float* logits, const int* labels, float* dlogits,
                                size_t batch, size_t classes, float scale, double* row_scratch,
                                double* stats, cudaStream_t stream);

// sums[c] = sum over rows r of m[r][c], accumulated in double in row order
// (as cpu::LinearWeightGrad's bias gradient) and rounded to float once.
// Overwrites sums.
cudaError_t ColumnSums(const float* m, float* sums, size_t rows, size_t cols, cudaStream_t stream);

// SGD with momentum, as torch.optim.SGD (dampening 0): v = m v + g;
// p -= lr v, each product and sum rounded to float like the CPU's (no fused
// multiply-add).
cudaError_t SgdMomentum(float* params, float* momentum, const float* grads, size_t n, float lr,
                        float m, cudaStream_t stream);

}  // namespace muster::train::gpu
