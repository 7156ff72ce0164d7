#include "worker_runtime/data/distributed_sampler.h"

#include <numeric>
#include <string>

#include "worker_runtime/data/permutation.h"

namespace muster::runtime {

Result<DistributedSampler> DistributedSampler::Create(const SamplerOptions& options) {
  if (options.dataset_size == 0) {
    return Status::InvalidArgument("dataset_size=0: the dataset must not be empty");
  }
  if (options.num_replicas <= 0) {
    return Status::InvalidArgument("num_replicas=" + std::to_string(options.num_replicas) +
                                   " must be at least 1");
  }
  if (options.rank < 0) {
    return Status::InvalidArgument("rank=" + std::to_string(options.rank) + " is negative");
  }
  if (options.rank >= options.num_replicas) {
    return Status::InvalidArgument(
        "rank=" + std::to_string(options.rank) +
        " is not below num_replicas=" + std::to_string(options.num_replicas));
  }
  const size_t world = static_cast<size_t>(options.num_replicas);
  const size_t num_samples =
      options.drop_last ? options.dataset_size / world : (options.dataset_size + world - 1) / world;
  return DistributedSampler(options, num_samples);
}

std::vector<size_t> DistributedSampler::GlobalOrder() const {
  const size_t n = options_.dataset_size;
  std::vector<size_t> order;
  if (options_.shuffle) {
    // Unsigned overflow wraps, so seed + epoch is well defined for any values,
    // matching torch's manual_seed(seed + epoch) for the values torch accepts.
    order = SeededPermutation(n, options_.seed + epoch_);
  } else {
    order.resize(n);
    std::iota(order.begin(), order.end(), size_t{0});
  }
  const size_t total = total_size();
  if (total <= n) {
    order.resize(total);  // drop_last trims the tail
    return order;
  }
  // torch pads with indices[:padding], or with the list repeated as often as
  // needed when padding > N: both are position i -> order[i mod N].
  order.reserve(total);
  for (size_t i = n; i < total; ++i) order.push_back(order[i % n]);
  return order;
}

std::vector<size_t> DistributedSampler::Indices(size_t start) const {
  if (start >= num_samples_) return {};
  const std::vector<size_t> global = GlobalOrder();
  const size_t world = static_cast<size_t>(options_.num_replicas);
  const size_t rank = static_cast<size_t>(options_.rank);
  std::vector<size_t> mine;
  mine.reserve(num_samples_ - start);
  for (size_t position = start; position < num_samples_; ++position) {
    mine.push_back(global[rank + position * world]);
  }
  return mine;
}

SamplerState DistributedSampler::StateAfter(size_t per_rank_consumed) const {
  return SamplerState{epoch_, static_cast<uint64_t>(per_rank_consumed) *
                                  static_cast<uint64_t>(options_.num_replicas)};
}

Result<size_t> DistributedSampler::Resume(const SamplerState& state) {
  const uint64_t world = static_cast<uint64_t>(options_.num_replicas);
  if (state.global_position % world != 0) {
    return Status::InvalidArgument("global_position=" + std::to_string(state.global_position) +
                                   " is not a multiple of num_replicas=" + std::to_string(world) +
                                   ": ranks would resume at different places");
  }
  if (state.global_position > total_size()) {
    return Status::InvalidArgument("global_position=" + std::to_string(state.global_position) +
                                   " exceeds total_size=" + std::to_string(total_size()));
  }
  epoch_ = state.epoch;
  return static_cast<size_t>(state.global_position / world);
}

}  // namespace muster::runtime
