// SamplerState: where a job stands in its data, small enough to store in a
// checkpoint (Checkpoint::epoch and Checkpoint::sampler_position) and hand
// back after a restart, possibly with another world size as long as the
// position divides evenly; see DistributedSampler::StateAfter and Resume.
// muster-train's PositionAfterStep (worker_runtime/train/sample_order.h)
// writes it too, for a stream with no padding.
//
// Thread-safety: a value type.
#pragma once

#include <cstdint>

namespace muster::runtime {

struct SamplerState {
  uint64_t epoch = 0;
  // Samples consumed in `epoch` by all ranks together (per-rank position times
  // the world size), DistributedSampler's padding included.
  uint64_t global_position = 0;

  bool operator==(const SamplerState&) const = default;
};

}  // namespace muster::runtime
