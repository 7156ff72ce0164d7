#include "worker_runtime/data/permutation.h"

#include <cassert>
#include <numeric>
#include <utility>

#include "common/splitmix64.h"

namespace muster::runtime {
namespace {

uint64_t RotateLeft(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Xoshiro256::Xoshiro256(uint64_t seed) {
  // splitmix64 never yields four zero words, the one state xoshiro cannot leave.
  // The generator's stream: SplitMix64 of seed, seed + gamma, seed + 2 gamma, ...
  constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ULL;
  for (uint64_t& word : state_) {
    word = SplitMix64(seed);
    seed += kGamma;
  }
}

uint64_t Xoshiro256::Next() {
  const uint64_t result = RotateLeft(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = RotateLeft(state_[3], 45);
  return result;
}

uint64_t Xoshiro256::Below(uint64_t bound) {
  assert(bound > 0);
  // Rejecting the lowest (2^64 mod bound) values leaves a range that is an
  // exact multiple of bound, so the modulo below is unbiased.
  const uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const uint64_t draw = Next();
    if (draw >= threshold) return draw % bound;
  }
}

std::vector<size_t> SeededPermutation(size_t n, uint64_t seed) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  Xoshiro256 rng(seed);
  for (size_t i = n; i > 1; --i) {
    const size_t j = static_cast<size_t>(rng.Below(i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

}  // namespace muster::runtime
