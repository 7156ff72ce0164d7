// A seeded permutation of [0, n) that is the same on every platform, compiler
// and standard library: xoshiro256** seeded through splitmix64, then a
// Fisher-Yates shuffle with unbiased bounded draws. std::shuffle and
// std::uniform_int_distribution are not used because their output is
// implementation-defined, and every rank of a job must agree on the order.
//
// Thread-safety: Xoshiro256 is a value; SeededPermutation is a pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace muster::runtime {

// xoshiro256** 1.0 (Blackman & Vigna). The state is expanded from one 64-bit
// seed with splitmix64, as the authors recommend.
class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed);

  uint64_t Next();

  // Uniform in [0, bound). REQUIRES: bound > 0.
  uint64_t Below(uint64_t bound);

 private:
  uint64_t state_[4];
};

// The permutation of [0, n) for `seed`; identical for identical arguments.
std::vector<size_t> SeededPermutation(size_t n, uint64_t seed);

}  // namespace muster::runtime
