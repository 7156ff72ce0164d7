// The CPU kernels against plain sample-by-sample loops: the kernels tile the
// batch for cache reuse, and promise results identical to the plain loops
// (the DDP-equivalence of 1, 2 and 4 ranks rests on each element summing its
// terms in one fixed order). Batches that are and are not multiples of the
// tile, and inputs with zeros (as after a ReLU).
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "worker_runtime/train/cpu_kernels.h"

namespace {

using muster::train::cpu::LinearForward;
using muster::train::cpu::LinearInputGrad;
using muster::train::cpu::LinearWeightGrad;

std::vector<float> Random(size_t n, uint32_t seed, bool with_zeros) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) {
    x = value(gen);
    if (with_zeros && x < 0) x = 0;  // half of them, as a ReLU leaves them
  }
  return v;
}

// The loops the kernels must agree with, element for element.
void PlainForward(const float* x, const float* w, const float* bias, float* z, size_t batch,
                  size_t in, size_t out) {
  for (size_t b = 0; b < batch; ++b) {
    for (size_t o = 0; o < out; ++o) z[b * out + o] = bias[o];
    for (size_t i = 0; i < in; ++i) {
      for (size_t o = 0; o < out; ++o) z[b * out + o] += x[b * in + i] * w[i * out + o];
    }
  }
}

void PlainWeightGrad(const float* x, const float* dz, double* dw, double* dbias, size_t batch,
                     size_t in, size_t out) {
  for (size_t b = 0; b < batch; ++b) {
    for (size_t i = 0; i < in; ++i) {
      for (size_t o = 0; o < out; ++o) {
        dw[i * out + o] += static_cast<double>(x[b * in + i]) * dz[b * out + o];
      }
    }
    for (size_t o = 0; o < out; ++o) dbias[o] += dz[b * out + o];
  }
}

// Eight partial sums per dot product, lane l taking terms o = l (mod 8).
void PlainInputGrad(const float* dz, const float* w, float* dx, size_t batch, size_t in,
                    size_t out) {
  for (size_t b = 0; b < batch; ++b) {
    for (size_t i = 0; i < in; ++i) {
      float lanes[8] = {};
      size_t o = 0;
      for (; o + 8 <= out; o += 8) {
        for (size_t l = 0; l < 8; ++l) lanes[l] += dz[b * out + o + l] * w[i * out + o + l];
      }
      float sum = 0;
      for (float lane : lanes) sum += lane;
      for (; o < out; ++o) sum += dz[b * out + o] * w[i * out + o];
      dx[b * in + i] = sum;
    }
  }
}

}  // namespace

TEST_CASE("the tiled CPU kernels equal sample-by-sample loops exactly") {
  const size_t in = 19, out = 37;  // odd widths: vector loops' remainders run
  for (size_t batch : {1u, 3u, 4u, 5u, 8u, 11u}) {
    CAPTURE(batch);
    const auto x = Random(batch * in, 1, /*with_zeros=*/true);
    const auto w = Random(in * out, 2, false);
    const auto bias = Random(out, 3, false);
    const auto dz = Random(batch * out, 4, false);

    std::vector<float> z(batch * out), z_plain(batch * out);
    LinearForward(x.data(), w.data(), bias.data(), z.data(), batch, in, out);
    PlainForward(x.data(), w.data(), bias.data(), z_plain.data(), batch, in, out);
    CHECK(z == z_plain);

    // Accumulates onto what is there, as across the layers of a step.
    std::vector<double> dw(in * out, 0.25), dw_plain(in * out, 0.25);
    std::vector<double> db(out, -0.5), db_plain(out, -0.5);
    LinearWeightGrad(x.data(), dz.data(), dw.data(), db.data(), batch, in, out);
    PlainWeightGrad(x.data(), dz.data(), dw_plain.data(), db_plain.data(), batch, in, out);
    CHECK(dw == dw_plain);
    CHECK(db == db_plain);

    std::vector<float> dx(batch * in), dx_plain(batch * in);
    LinearInputGrad(dz.data(), w.data(), dx.data(), batch, in, out);
    PlainInputGrad(dz.data(), w.data(), dx_plain.data(), batch, in, out);
    CHECK(dx == dx_plain);
  }
}
