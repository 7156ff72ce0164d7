// The CPU kernels of the MLP, on row-major matrices. Weights are stored
// input-major ([in][out]) so the hot loops are axpy-shaped and vectorize
// without reassociating sums: results do not depend on the compiler's
// floating-point liberties.
#pragma once

#include <cstddef>

namespace muster::train::cpu {

// z[b][o] = bias[o] + sum_i x[b][i] * w[i][o]
void LinearForward(const float* x, const float* w, const float* bias, float* z, size_t batch,
                   size_t in, size_t out);
// dw[i][o] += sum_b x[b][i] * dz[b][o];  dbias[o] += sum_b dz[b][o]
// Accumulated in double: a product of two floats is exact in double, so the
// sums barely depend on how samples are split across ranks.
void LinearWeightGrad(const float* x, const float* dz, double* dw, double* dbias, size_t batch,
                      size_t in, size_t out);
// dx[b][i] = sum_o dz[b][o] * w[i][o]
void LinearInputGrad(const float* dz, const float* w, float* dx, size_t batch, size_t in,
                     size_t out);
// z = max(z, 0) in place.
void Relu(float* z, size_t n);
// dx[k] = z[k] > 0 ? dx[k] : 0 (z: the pre-activation, or the ReLU output).
void ReluGrad(const float* z, float* dx, size_t n);
// Per row of logits: softmax cross-entropy against labels. Writes the
// gradient (softmax - onehot) * scale into dlogits; returns the sum of the
// losses and counts rows whose argmax is the label in *correct.
double SoftmaxCrossEntropy(const float* logits, const int* labels, float* dlogits, size_t batch,
                           size_t classes, float scale, double* correct);

}  // namespace muster::train::cpu
