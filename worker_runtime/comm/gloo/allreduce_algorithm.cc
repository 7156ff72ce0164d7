#include "worker_runtime/comm/gloo/allreduce_algorithm.h"

namespace muster::runtime {

const char* GlooAllreduceName(GlooAllreduce algorithm) {
  switch (algorithm) {
    case GlooAllreduce::kRing:
      return "ring";
    case GlooAllreduce::kBcube:
      return "bcube";
    case GlooAllreduce::kSharedMemory:
      return "shm";
  }
  return "unknown";
}

GlooAllreduce ChooseGlooAllreduce(size_t bytes, int world_size, bool shared_memory) {
  if (shared_memory) return GlooAllreduce::kSharedMemory;
  // Below 1 MB messages are latency-bound: bcube needs log2(W) rounds where
  // the ring needs 2(W-1). From 1 MB the ring sends the optimal 2(W-1)/W of
  // the buffer per rank. Bcube's groups need a power-of-two world. The
  // allreduce_algorithm.h commands measure where the two cross.
  constexpr size_t kLatencyBoundBytes = 1 << 20;
  const bool power_of_two = world_size > 1 && (world_size & (world_size - 1)) == 0;
  return power_of_two && bytes < kLatencyBoundBytes ? GlooAllreduce::kBcube : GlooAllreduce::kRing;
}

Result<std::optional<GlooAllreduce>> ParseGlooAllreduce(const std::string& text) {
  if (text.empty() || text == "auto") return std::optional<GlooAllreduce>();
  for (GlooAllreduce algorithm :
       {GlooAllreduce::kRing, GlooAllreduce::kBcube, GlooAllreduce::kSharedMemory}) {
    if (text == GlooAllreduceName(algorithm)) return std::optional<GlooAllreduce>(algorithm);
  }
  return Status::InvalidArgument("MUSTER_GLOO_ALLREDUCE='" + text +
                                 "' is not one of auto, ring, bcube, shm");
}

}  // namespace muster::runtime
