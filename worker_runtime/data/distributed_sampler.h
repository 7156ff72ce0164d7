// DistributedSampler: the dataset indices one rank reads in one epoch, with
// the semantics of torch.utils.data.DistributedSampler.
//
// For dataset size N and world size W, an epoch's global order is
//   1. a permutation of [0, N) seeded by seed + epoch (SeededPermutation, the
//      same on every platform) when shuffling, else 0, 1, ..., N-1;
//   2. without drop_last: padded to total_size = ceil(N/W)*W by repeating the
//      order from its start (cyclically, when more than N are missing);
//      with drop_last: trimmed from the end to total_size = floor(N/W)*W.
// Rank r reads positions r, r+W, r+2W, ... of the global order, so every rank
// gets num_samples = total_size / W indices.
//
// With a global batch G divisible by W and per-rank batch B = G/W, the union
// over ranks of per-rank positions [kB, (k+1)B) is global positions
// [kG, (k+1)G). (muster-train does not use this sampler: its order,
// worker_runtime/train/sample_order.h, is the same global order read in
// contiguous shares, at any W.)
//
// Resuming mid-epoch, the one supported way:
//   checkpoint:  SamplerState s = sampler.StateAfter(consumed_per_rank);
//                store s.epoch and s.global_position (Checkpoint has both);
//   restart:     auto start = sampler.Resume(SamplerState{epoch, position});
//                for (size_t i : sampler.Indices(*start)) ...
// The resumed run reads exactly what the uninterrupted one would have read
// next, also after a change of world size W -> W' when the position is a
// multiple of W' (the global order does not depend on W; only the padded
// tail, whose length does, may differ).
//
// Thread-safety: a value type; const methods may run concurrently, SetEpoch
// and Resume need exclusive access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "worker_runtime/data/sampler_state.h"

namespace muster::runtime {

struct SamplerOptions {
  size_t dataset_size = 0;  // N, > 0
  int num_replicas = 0;     // W, > 0
  int rank = 0;             // in [0, W)
  bool shuffle = true;
  uint64_t seed = 0;  // must be the same on every rank
  bool drop_last = false;
};

class DistributedSampler {
 public:
  // Validates the options. Errors quote the bad value, e.g.
  // "rank=4 is not below num_replicas=4". drop_last with N < W is accepted
  // and yields empty epochs, as torch does.
  static Result<DistributedSampler> Create(const SamplerOptions& options);

  // Selects the epoch's shuffle. Call with the same value on every rank.
  void SetEpoch(uint64_t epoch) { epoch_ = epoch; }
  uint64_t epoch() const { return epoch_; }

  // Indices per rank per epoch, and across all ranks (num_samples * W).
  size_t num_samples() const { return num_samples_; }
  size_t total_size() const { return num_samples_ * static_cast<size_t>(options_.num_replicas); }
  const SamplerOptions& options() const { return options_; }

  // This rank's indices for the current epoch, from per-rank position `start`
  // on: Indices(start) is Indices() without its first `start` entries, so
  // element i is GlobalOrder()[rank + (start + i) * W]. Empty when
  // start >= num_samples(). O(N) time and memory per call.
  std::vector<size_t> Indices(size_t start = 0) const;

  // The padded or trimmed global order of the current epoch (total_size()
  // entries), before it is strided across ranks.
  std::vector<size_t> GlobalOrder() const;

  // The state to checkpoint once every rank has consumed the first
  // `per_rank_consumed` indices of the current epoch (ranks advance in
  // lockstep, so every rank computes the same state):
  // {epoch(), per_rank_consumed * W}. Does not change the sampler.
  // REQUIRES: per_rank_consumed <= num_samples(); num_samples() marks the
  // epoch's end (Resume then yields an empty Indices()).
  SamplerState StateAfter(size_t per_rank_consumed) const;

  // The inverse of StateAfter, possibly under another world size: moves to
  // state.epoch (as SetEpoch) and returns the per-rank position to pass to
  // Indices(), state.global_position / W.
  // Errors (InvalidArgument quoting the values; the sampler is unchanged):
  // global_position is not a multiple of num_replicas (ranks would resume at
  // different places), or exceeds total_size().
  Result<size_t> Resume(const SamplerState& state);

 private:
  DistributedSampler(const SamplerOptions& options, size_t num_samples)
      : options_(options), num_samples_(num_samples) {}

  SamplerOptions options_;
  size_t num_samples_ = 0;
  uint64_t epoch_ = 0;
};

}  // namespace muster::runtime
