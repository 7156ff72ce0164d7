#include "worker_runtime/comm/gloo/allreduce_algorithm.h"

namespace muster::runtime {

const char* GlooAllreduceName(GlooAllreduce algorithm) {
  switch (algorithm) {
    case GlooAllreduce::kRing:
      return "ring";
    case GlooAllreduce::kRingChunked:
      return "ring_chunked";
    case GlooAllreduce::kHalvingDoubling:
      return "halving_doubling";
    case GlooAllreduce::kBcube:
      return "bcube";
  }
  return "unknown";
}

GlooAllreduce ChooseGlooAllreduce(size_t bytes, int world_size) {
  // Small messages are latency-bound: halving-doubling needs log2(W) rounds
  // where a ring needs 2(W-1). Large ones are bandwidth-bound: the chunked
  // ring pipelines chunks and sends 2(W-1)/W of the buffer per rank.
  constexpr size_t kLatencyBoundBytes = 256 * 1024;
  if (world_size <= 2 || bytes < kLatencyBoundBytes) return GlooAllreduce::kHalvingDoubling;
  return GlooAllreduce::kRingChunked;
}

Result<std::optional<GlooAllreduce>> ParseGlooAllreduce(const std::string& text) {
  if (text.empty() || text == "auto") return std::optional<GlooAllreduce>();
  for (GlooAllreduce algorithm : {GlooAllreduce::kRing, GlooAllreduce::kRingChunked,
                                  GlooAllreduce::kHalvingDoubling, GlooAllreduce::kBcube}) {
    if (text == GlooAllreduceName(algorithm)) return std::optional<GlooAllreduce>(algorithm);
  }
  return Status::InvalidArgument("MUSTER_GLOO_ALLREDUCE='" + text +
                                 "' is not one of auto, ring, ring_chunked, halving_doubling, "
                                 "bcube");
}

}  // namespace muster::runtime
