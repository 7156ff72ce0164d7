// SyntheticDataset: a deterministic classification dataset generated from a
// seed, so every rank (and every restart) sees the same sample i without any
// file. Sample i: label = i mod classes; features = the label's center plus
// noise, both drawn from counter-based random numbers of (seed, i).
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace muster::train {

class SyntheticDataset {
 public:
  SyntheticDataset(uint64_t seed, size_t size, int features, int classes);

  size_t size() const { return size_; }
  int features() const { return features_; }
  int classes() const { return classes_; }

  // Writes sample `index`'s features to `out` (features() floats) and returns its label.
  int Sample(size_t index, std::span<float> out) const;

 private:
  uint64_t seed_;
  size_t size_;
  int features_;
  int classes_;
  std::vector<float> centers_;  // classes x features
};

// A counter-based generator: the same (seed, stream, i) gives the same
// value on every platform. Uniform in [-1, 1).
float UniformSigned(uint64_t seed, uint64_t stream, uint64_t i);

}  // namespace muster::train
