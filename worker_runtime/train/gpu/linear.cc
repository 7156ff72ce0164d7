#include "worker_runtime/train/gpu/linear.h"

#include <climits>
#include <string>

#include "worker_runtime/train/gpu/cuda_check.h"
#include "worker_runtime/train/gpu/kernels.h"
#include "worker_runtime/train/replica.h"

namespace muster::train::gpu {
namespace {

int Dim(size_t n, const char* what) {
  if (n > static_cast<size_t>(INT_MAX)) {
    throw DeviceError(std::string("cublasSgemm: ") + what + " " + std::to_string(n) +
                      " does not fit cuBLAS's int");
  }
  return static_cast<int>(n);
}

// cuBLAS is column-major: a row-major [r][c] matrix is, to it, the
// column-major c x r matrix with leading dimension c (its transpose). Each
// product below is written for those transposed views.
void Sgemm(Blas& blas, cublasOperation_t a_op, cublasOperation_t b_op, size_t m, size_t n, size_t k,
           const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc,
           const char* call) {
  const float one = 1.0f;
  const float zero = 0.0f;
  CheckCublas(cublasSgemm(blas.handle(), a_op, b_op, Dim(m, "m"), Dim(n, "n"), Dim(k, "k"), &one, a,
                          Dim(lda, "lda"), b, Dim(ldb, "ldb"), &zero, c, Dim(ldc, "ldc")),
              call);
}

}  // namespace

Blas::Blas(cudaStream_t stream) : stream_(stream) {
  CheckCublas(cublasCreate(&handle_), "cublasCreate");
  try {
    CheckCublas(cublasSetStream(handle_, stream_), "cublasSetStream");
    CheckCublas(cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH),
                "cublasSetMathMode(CUBLAS_PEDANTIC_MATH)");
  } catch (...) {
    cublasDestroy(handle_);
    throw;
  }
}

Blas::~Blas() { cublasDestroy(handle_); }

void LinearForward(Blas& blas, const float* x, const float* w, const float* bias, float* z,
                   size_t batch, size_t in, size_t out) {
  // z^T (out x batch) = w^T (out x in) * x^T (in x batch)
  Sgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, out, batch, in, w, out, x, in, z, out,
        "cublasSgemm(forward)");
  CheckCuda(BiasAdd(z, bias, batch, out, blas.stream()), "kernel BiasAdd");
}

void LinearWeightGrad(Blas& blas, const float* x, const float* dz, float* dw, float* dbias,
                      size_t batch, size_t in, size_t out) {
  // dw^T (out x in) = dz^T (out x batch) * x (batch x in)
  Sgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, out, in, batch, dz, out, x, in, dw, out,
        "cublasSgemm(weight gradient)");
  CheckCuda(ColumnSums(dz, dbias, batch, out, blas.stream()), "kernel ColumnSums");
}

void LinearInputGrad(Blas& blas, const float* dz, const float* w, float* dx, size_t batch,
                     size_t in, size_t out) {
  // dx^T (in x batch) = w (in x out) * dz^T (out x batch)
  Sgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, in, batch, out, w, out, dz, out, dx, in,
        "cublasSgemm(input gradient)");
}

}  // namespace muster::train::gpu
