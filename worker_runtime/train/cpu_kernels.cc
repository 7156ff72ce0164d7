#include "worker_runtime/train/cpu_kernels.h"

#include <algorithm>
#include <cmath>

namespace muster::train::cpu {

void LinearForward(const float* x, const float* w, const float* bias, float* z, size_t batch,
                   size_t in, size_t out) {
  for (size_t b = 0; b < batch; ++b) {
    float* zr = z + b * out;
    std::copy(bias, bias + out, zr);
    const float* xr = x + b * in;
    for (size_t i = 0; i < in; ++i) {
      const float xv = xr[i];
      const float* wr = w + i * out;
      for (size_t o = 0; o < out; ++o) zr[o] += xv * wr[o];
    }
  }
}

void LinearWeightGrad(const float* x, const float* dz, double* dw, double* dbias, size_t batch,
                      size_t in, size_t out) {
  for (size_t b = 0; b < batch; ++b) {
    const float* dzr = dz + b * out;
    const float* xr = x + b * in;
    for (size_t i = 0; i < in; ++i) {
      const double xv = xr[i];
      if (xv == 0.0) continue;  // ReLU outputs are often 0: skip their row
      double* dwr = dw + i * out;
      for (size_t o = 0; o < out; ++o) dwr[o] += xv * static_cast<double>(dzr[o]);
    }
    for (size_t o = 0; o < out; ++o) dbias[o] += dzr[o];
  }
}

void LinearInputGrad(const float* dz, const float* w, float* dx, size_t batch, size_t in,
                     size_t out) {
  // A dot product per (b, i): eight independent partial sums let the
  // compiler use vector lanes without reassociating one long sum.
  constexpr size_t kLanes = 8;
  for (size_t b = 0; b < batch; ++b) {
    const float* dzr = dz + b * out;
    for (size_t i = 0; i < in; ++i) {
      const float* wr = w + i * out;
      float acc[kLanes] = {};
      size_t o = 0;
      for (; o + kLanes <= out; o += kLanes) {
        for (size_t l = 0; l < kLanes; ++l) acc[l] += dzr[o + l] * wr[o + l];
      }
      float sum = 0;
      for (size_t l = 0; l < kLanes; ++l) sum += acc[l];
      for (; o < out; ++o) sum += dzr[o] * wr[o];
      dx[b * in + i] = sum;
    }
  }
}

void Relu(float* z, size_t n) {
  for (size_t k = 0; k < n; ++k) z[k] = z[k] > 0.0f ? z[k] : 0.0f;
}

void ReluGrad(const float* z, float* dx, size_t n) {
  for (size_t k = 0; k < n; ++k) dx[k] = z[k] > 0.0f ? dx[k] : 0.0f;
}

double SoftmaxCrossEntropy(const float* logits, const int* labels, float* dlogits, size_t batch,
                           size_t classes, float scale, double* correct) {
  double loss_sum = 0;
  for (size_t b = 0; b < batch; ++b) {
    const float* z = logits + b * classes;
    float* dz = dlogits + b * classes;
    const size_t label = static_cast<size_t>(labels[b]);
    const size_t argmax = static_cast<size_t>(std::max_element(z, z + classes) - z);
    const float m = z[argmax];
    double denom = 0;
    for (size_t c = 0; c < classes; ++c) denom += std::exp(static_cast<double>(z[c] - m));
    loss_sum += std::log(denom) - static_cast<double>(z[label] - m);
    for (size_t c = 0; c < classes; ++c) {
      const double p = std::exp(static_cast<double>(z[c] - m)) / denom;
      dz[c] = static_cast<float>((p - (c == label ? 1.0 : 0.0)) * scale);
    }
    if (argmax == label) *correct += 1;
  }
  return loss_sum;
}

}  // namespace muster::train::cpu
