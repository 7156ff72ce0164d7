#include <cuda_runtime.h>

#include <algorithm>

#include "worker_runtime/train/gpu/kernels.h"

namespace muster::train::gpu {
namespace {

constexpr unsigned kThreads = 256;
// Grid-stride loops cover any size; more blocks than this only queue up.
constexpr size_t kMaxBlocks = 4096;

unsigned BlocksFor(size_t n) {
  return static_cast<unsigned>(std::min(kMaxBlocks, (n + kThreads - 1) / kThreads));
}

__device__ size_t FirstIndex() { return size_t{blockIdx.x} * blockDim.x + threadIdx.x; }
__device__ size_t Stride() { return size_t{gridDim.x} * blockDim.x; }

__global__ void BiasAddKernel(float* z, const float* bias, size_t n, size_t out) {
  for (size_t k = FirstIndex(); k < n; k += Stride()) z[k] += bias[k % out];
}

__global__ void ReluKernel(float* z, size_t n) {
  for (size_t k = FirstIndex(); k < n; k += Stride()) z[k] = z[k] > 0.0f ? z[k] : 0.0f;
}

__global__ void ReluGradKernel(const float* z, float* dx, size_t n) {
  for (size_t k = FirstIndex(); k < n; k += Stride()) dx[k] = z[k] > 0.0f ? dx[k] : 0.0f;
}

// One thread per row: the MLP's class counts are small, and a row in one
// thread keeps the CPU's order of operations.
__global__ void SoftmaxRowsKernel(const float* logits, const int* labels, float* dlogits,
                                  size_t batch, size_t classes, float scale, double* row_loss,
                                  double* row_correct) {
  for (size_t b = FirstIndex(); b < batch; b += Stride()) {
    const float* z = logits + b * classes;
    float* dz = dlogits + b * classes;
    const size_t label = static_cast<size_t>(labels[b]);
    size_t argmax = 0;
    for (size_t c = 1; c < classes; ++c) {
      if (z[c] > z[argmax]) argmax = c;
    }
    const float m = z[argmax];
    double denom = 0;
    for (size_t c = 0; c < classes; ++c) denom += exp(static_cast<double>(z[c] - m));
    row_loss[b] = log(denom) - static_cast<double>(z[label] - m);
    for (size_t c = 0; c < classes; ++c) {
      const double p = exp(static_cast<double>(z[c] - m)) / denom;
      dz[c] = static_cast<float>((p - (c == label ? 1.0 : 0.0)) * scale);
    }
    row_correct[b] = argmax == label ? 1.0 : 0.0;
  }
}

// One block: each thread sums a fixed stride of rows, then a tree in shared
// memory; the same order every run.
__global__ void SumRowsKernel(const double* row_loss, const double* row_correct, size_t batch,
                              double* stats) {
  __shared__ double loss[kThreads];
  __shared__ double correct[kThreads];
  double l = 0;
  double c = 0;
  for (size_t b = threadIdx.x; b < batch; b += blockDim.x) {
    l += row_loss[b];
    c += row_correct[b];
  }
  loss[threadIdx.x] = l;
  correct[threadIdx.x] = c;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      loss[threadIdx.x] += loss[threadIdx.x + half];
      correct[threadIdx.x] += correct[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    stats[0] = loss[0];
    stats[1] = correct[0];
  }
}

// One thread per column: neighbouring threads read neighbouring floats of a
// row (coalesced), and each column is summed in row order.
__global__ void ColumnSumsKernel(const float* m, float* sums, size_t rows, size_t cols) {
  for (size_t c = FirstIndex(); c < cols; c += Stride()) {
    double acc = 0;
    for (size_t r = 0; r < rows; ++r) acc += m[r * cols + c];
    sums[c] = static_cast<float>(acc);
  }
}

__global__ void SgdMomentumKernel(float* params, float* momentum, const float* grads, size_t n,
                                  float lr, float m) {
  // The intrinsics round each operation: nvcc would otherwise fuse them into
  // FMAs and drift from the CPU's update by an ulp per step.
  for (size_t k = FirstIndex(); k < n; k += Stride()) {
    const float v = __fadd_rn(__fmul_rn(m, momentum[k]), grads[k]);
    momentum[k] = v;
    params[k] = __fsub_rn(params[k], __fmul_rn(lr, v));
  }
}

}  // namespace

cudaError_t BiasAdd(float* z, const float* bias, size_t batch, size_t out, cudaStream_t stream) {
  const size_t n = batch * out;
  if (n == 0) return cudaSuccess;
  BiasAddKernel<<<BlocksFor(n), kThreads, 0, stream>>>(z, bias, n, out);
  return cudaGetLastError();
}

cudaError_t Relu(float* z, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  ReluKernel<<<BlocksFor(n), kThreads, 0, stream>>>(z, n);
  return cudaGetLastError();
}

cudaError_t ReluGrad(const float* z, float* dx, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  ReluGradKernel<<<BlocksFor(n), kThreads, 0, stream>>>(z, dx, n);
  return cudaGetLastError();
}

cudaError_t SoftmaxCrossEntropy(const float* logits, const int* labels, float* dlogits,
                                size_t batch, size_t classes, float scale, double* row_scratch,
                                double* stats, cudaStream_t stream) {
  double* row_loss = row_scratch;
  double* row_correct = row_scratch + batch;
  if (batch > 0 && classes > 0) {
    SoftmaxRowsKernel<<<BlocksFor(batch), kThreads, 0, stream>>>(
        logits, labels, dlogits, batch, classes, scale, row_loss, row_correct);
    if (cudaError_t rc = cudaGetLastError(); rc != cudaSuccess) return rc;
  }
  // Also for an empty batch: the stats are then zeros.
  SumRowsKernel<<<1, kThreads, 0, stream>>>(row_loss, row_correct, batch, stats);
  return cudaGetLastError();
}

cudaError_t ColumnSums(const float* m, float* sums, size_t rows, size_t cols, cudaStream_t stream) {
  if (cols == 0) return cudaSuccess;
  ColumnSumsKernel<<<BlocksFor(cols), kThreads, 0, stream>>>(m, sums, rows, cols);
  return cudaGetLastError();
}

cudaError_t SgdMomentum(float* params, float* momentum, const float* grads, size_t n, float lr,
                        float m, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  SgdMomentumKernel<<<BlocksFor(n), kThreads, 0, stream>>>(params, momentum, grads, n, lr, m);
  return cudaGetLastError();
}

}  // namespace muster::train::gpu
