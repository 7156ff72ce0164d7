#include "worker_runtime/train/synthetic_dataset.h"

#include "common/splitmix64.h"

namespace muster::train {
namespace {

constexpr uint64_t kCenterStream = 1;
constexpr uint64_t kNoiseStream = 2;
constexpr float kNoiseScale = 0.8f;  // classes overlap a little: the loss does not reach 0 at once

}  // namespace

float UniformSigned(uint64_t seed, uint64_t stream, uint64_t i) {
  const uint64_t bits = SplitMix64(SplitMix64(seed ^ (stream * 0xD1B54A32D192ED03ull)) + i);
  // 24 random bits: exactly representable as float.
  return static_cast<float>(bits >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

SyntheticDataset::SyntheticDataset(uint64_t seed, size_t size, int features, int classes)
    : seed_(seed), size_(size), features_(features), classes_(classes) {
  centers_.resize(static_cast<size_t>(classes) * static_cast<size_t>(features));
  for (size_t k = 0; k < centers_.size(); ++k) centers_[k] = UniformSigned(seed, kCenterStream, k);
}

int SyntheticDataset::Sample(size_t index, std::span<float> out) const {
  const int label = static_cast<int>(index % static_cast<size_t>(classes_));
  const size_t f = static_cast<size_t>(features_);
  const float* center = centers_.data() + static_cast<size_t>(label) * f;
  for (size_t k = 0; k < f; ++k) {
    out[k] = center[k] + kNoiseScale * UniformSigned(seed_, kNoiseStream, index * f + k);
  }
  return label;
}

}  // namespace muster::train
