// SplitMix64: Steele, Lea and Flood's 64-bit mixer. The same input gives the
// same output on every platform, unlike the standard library's
// distributions: seeds and counter-based random numbers are built on it.
#pragma once

#include <cstdint>

namespace muster {

constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace muster
