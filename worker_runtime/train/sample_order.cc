#include "worker_runtime/train/sample_order.h"

#include <algorithm>

#include "worker_runtime/data/permutation.h"

namespace muster::train {
namespace {

std::string Ranks(int first, int last) {
  if (first == last) return "rank " + std::to_string(first);
  return "ranks " + std::to_string(first) + "-" + std::to_string(last);
}

std::string Samples(size_t n) { return std::to_string(n) + (n == 1 ? " sample" : " samples"); }

}  // namespace

Share ShareOf(size_t global_batch, int world_size, int rank) {
  const size_t world = static_cast<size_t>(world_size);
  const size_t r = static_cast<size_t>(rank);
  const size_t base = global_batch / world;
  const size_t extra = global_batch % world;  // the first `extra` ranks read one more
  return {.offset = r * base + std::min(r, extra), .count = base + (r < extra ? 1 : 0)};
}

std::string DescribeSplit(size_t global_batch, int world_size) {
  const size_t extra = global_batch % static_cast<size_t>(world_size);
  const size_t base = global_batch / static_cast<size_t>(world_size);
  if (extra == 0) return Samples(base) + " per rank";
  const int larger = static_cast<int>(extra);
  return Samples(base + 1) + " on " + Ranks(0, larger - 1) + ", " + std::to_string(base) + " on " +
         Ranks(larger, world_size - 1);
}

runtime::SamplerState PositionAfterStep(uint64_t step, size_t global_batch, size_t dataset_size) {
  const uint64_t stream = step * static_cast<uint64_t>(global_batch);
  return {.epoch = stream / dataset_size, .global_position = stream % dataset_size};
}

SampleOrder::SampleOrder(uint64_t seed, size_t dataset_size)
    : seed_(seed), dataset_size_(dataset_size) {}

size_t SampleOrder::At(uint64_t position) {
  const uint64_t epoch = position / dataset_size_;
  if (!cached_ || epoch != cached_epoch_) {
    // seed + epoch, as DistributedSampler's shuffle (unsigned: wraps).
    permutation_ = runtime::SeededPermutation(dataset_size_, seed_ + epoch);
    cached_epoch_ = epoch;
    cached_ = true;
  }
  return permutation_[position % dataset_size_];
}

void SampleOrder::StepIndices(uint64_t step, size_t global_batch, const Share& share,
                              std::vector<size_t>& out) {
  out.resize(share.count);
  const uint64_t first = step * static_cast<uint64_t>(global_batch) + share.offset;
  for (size_t j = 0; j < share.count; ++j) out[j] = At(first + j);
}

}  // namespace muster::train
