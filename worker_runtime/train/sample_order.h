// Which samples muster-train reads at each step, and which rank reads them:
// the same samples, summed the same way, at every world size.
//
// The order. Epochs are laid end to end into one stream of global positions
// 0, 1, 2, ...: position p is sample SeededPermutation(N, seed + p / N)[p % N]
// (N the dataset size; the permutation is DistributedSampler's global order,
// data/permutation.h). Step s reads positions [s*G, (s+1)*G) (G the global
// batch). So every sample is read once per epoch, nothing is dropped or
// padded, N need not be a multiple of anything, and a step that crosses an
// epoch's end reads the rest of one epoch and then the start of the next
// (several, when G > N). None of it depends on the world size W.
//
// The split. Rank r reads a contiguous share of the step's positions, in rank
// order: G / W samples each, and one more on the first G % W ranks. With
// G < W the last W - G ranks read none; they still take part in every
// collective, with a zero gradient.
//
// The data position after step s, as a checkpoint keeps it
// (Checkpoint::epoch, ::sampler_position): {epoch (s*G) / N, position
// (s*G) % N}. It depends on s, G and N only, so a checkpoint written at one
// world size resumes at any other.
//
// Thread-safety: ShareOf, DescribeSplit and PositionAfterStep are pure;
// SampleOrder is a value whose methods need exclusive access (a cache).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "worker_runtime/data/sampler_state.h"

namespace muster::train {

// A rank's part of a global batch: positions [offset, offset + count) of it.
struct Share {
  size_t offset = 0;
  size_t count = 0;

  bool operator==(const Share&) const = default;
};

// Rank `rank`'s share of a global batch of `global_batch` samples.
// REQUIRES: world_size > 0; 0 <= rank < world_size.
Share ShareOf(size_t global_batch, int world_size, int rank);

// How a global batch splits, for a log line: "64 samples per rank", or
// "86 samples on rank 0, 85 on ranks 1-2". REQUIRES: world_size > 0.
std::string DescribeSplit(size_t global_batch, int world_size);

// Where the stream stands once `step` steps are done (see above).
// REQUIRES: dataset_size > 0.
runtime::SamplerState PositionAfterStep(uint64_t step, size_t global_batch, size_t dataset_size);

class SampleOrder {
 public:
  // REQUIRES: dataset_size > 0.
  SampleOrder(uint64_t seed, size_t dataset_size);

  // The dataset index at global position `position` of the stream.
  // Computes an epoch's permutation (O(N)) when `position` is in another
  // epoch than the previous call's; positions read in increasing order cost
  // one permutation per epoch.
  size_t At(uint64_t position);

  // The indices `share` of step `step` reads, in order, into `out`
  // (resized to share.count).
  void StepIndices(uint64_t step, size_t global_batch, const Share& share,
                   std::vector<size_t>& out);

 private:
  uint64_t seed_;
  size_t dataset_size_;
  bool cached_ = false;
  uint64_t cached_epoch_ = 0;
  std::vector<size_t> permutation_;  // of cached_epoch_
};

}  // namespace muster::train
