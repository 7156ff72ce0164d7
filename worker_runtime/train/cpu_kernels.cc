#include "worker_runtime/train/cpu_kernels.h"

#include <algorithm>
#include <cmath>

namespace muster::train::cpu {

namespace {

// The kernels walk the batch in tiles of kSamples samples: each row of the
// weights (or of their gradient) is loaded once per tile instead of once
// per sample, which keeps the hot loop in L1 rather than streaming the whole
// matrix from memory for every sample. Each output element still sums its
// terms in the same order as a sample-by-sample loop, so results are
// identical to it.
constexpr size_t kSamples = 4;

}  // namespace

void LinearForward(const float* x, const float* w, const float* bias, float* z, size_t batch,
                   size_t in, size_t out) {
  for (size_t b0 = 0; b0 < batch; b0 += kSamples) {
    const size_t n = std::min(kSamples, batch - b0);
    for (size_t k = 0; k < n; ++k) std::copy(bias, bias + out, z + (b0 + k) * out);
    for (size_t i = 0; i < in; ++i) {
      const float* __restrict wr = w + i * out;
      if (n == kSamples) {
        const float x0 = x[b0 * in + i], x1 = x[(b0 + 1) * in + i];
        const float x2 = x[(b0 + 2) * in + i], x3 = x[(b0 + 3) * in + i];
        float* __restrict z0 = z + b0 * out;
        float* __restrict z1 = z0 + out;
        float* __restrict z2 = z1 + out;
        float* __restrict z3 = z2 + out;
        for (size_t o = 0; o < out; ++o) {
          z0[o] += x0 * wr[o];
          z1[o] += x1 * wr[o];
          z2[o] += x2 * wr[o];
          z3[o] += x3 * wr[o];
        }
        continue;
      }
      for (size_t k = 0; k < n; ++k) {
        const float xv = x[(b0 + k) * in + i];
        float* __restrict zr = z + (b0 + k) * out;
        for (size_t o = 0; o < out; ++o) zr[o] += xv * wr[o];
      }
    }
  }
}

void LinearWeightGrad(const float* x, const float* dz, double* dw, double* dbias, size_t batch,
                      size_t in, size_t out) {
  for (size_t b0 = 0; b0 < batch; b0 += kSamples) {
    const size_t n = std::min(kSamples, batch - b0);
    for (size_t i = 0; i < in; ++i) {
      double* __restrict dwr = dw + i * out;
      if (n == kSamples) {
        // A zero input (ReLU outputs often are) adds exactly +-0: skipping
        // it, as the remainder loop does, changes nothing, but testing each
        // term would cost the vector loop more than it saves.
        const double x0 = x[b0 * in + i], x1 = x[(b0 + 1) * in + i];
        const double x2 = x[(b0 + 2) * in + i], x3 = x[(b0 + 3) * in + i];
        if (x0 == 0.0 && x1 == 0.0 && x2 == 0.0 && x3 == 0.0) continue;
        const float* __restrict d0 = dz + b0 * out;
        const float* __restrict d1 = d0 + out;
        const float* __restrict d2 = d1 + out;
        const float* __restrict d3 = d2 + out;
        for (size_t o = 0; o < out; ++o) {
          double sum = dwr[o];
          sum += x0 * static_cast<double>(d0[o]);
          sum += x1 * static_cast<double>(d1[o]);
          sum += x2 * static_cast<double>(d2[o]);
          sum += x3 * static_cast<double>(d3[o]);
          dwr[o] = sum;
        }
        continue;
      }
      for (size_t k = 0; k < n; ++k) {
        const double xv = x[(b0 + k) * in + i];
        if (xv == 0.0) continue;
        const float* __restrict dzr = dz + (b0 + k) * out;
        for (size_t o = 0; o < out; ++o) dwr[o] += xv * static_cast<double>(dzr[o]);
      }
    }
  }
  for (size_t b = 0; b < batch; ++b) {
    const float* dzr = dz + b * out;
    for (size_t o = 0; o < out; ++o) dbias[o] += dzr[o];
  }
}

void LinearInputGrad(const float* dz, const float* w, float* dx, size_t batch, size_t in,
                     size_t out) {
  // A dot product per (b, i): eight independent partial sums let the
  // compiler use vector lanes without reassociating one long sum. The
  // weight row is reused for a tile of samples while it is in L1.
  constexpr size_t kLanes = 8;
  for (size_t b0 = 0; b0 < batch; b0 += kSamples) {
    const size_t n = std::min(kSamples, batch - b0);
    for (size_t i = 0; i < in; ++i) {
      const float* wr = w + i * out;
      for (size_t k = 0; k < n; ++k) {
        const float* dzr = dz + (b0 + k) * out;
        float acc[kLanes] = {};
        size_t o = 0;
        for (; o + kLanes <= out; o += kLanes) {
          for (size_t l = 0; l < kLanes; ++l) acc[l] += dzr[o + l] * wr[o + l];
        }
        float sum = 0;
        for (size_t l = 0; l < kLanes; ++l) sum += acc[l];
        for (; o < out; ++o) sum += dzr[o] * wr[o];
        dx[(b0 + k) * in + i] = sum;
      }
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
