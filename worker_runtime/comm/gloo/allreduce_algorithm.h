// Which of Gloo's allreduce algorithms runs a message of a given size.
//
// Measured on loopback with 2 and 4 ranks (scripts/bench/allreduce.sh with
// MUSTER_GLOO_ALLREDUCE forcing each one); see ChooseGlooAllreduce for the
// thresholds. MUSTER_GLOO_ALLREDUCE=ring|ring_chunked|halving_doubling|bcube
// overrides the choice (for measuring); "auto" or unset keeps it.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "common/status.h"

namespace muster::runtime {

enum class GlooAllreduce { kRing, kRingChunked, kHalvingDoubling, kBcube };

const char* GlooAllreduceName(GlooAllreduce algorithm);

// The algorithm for `bytes` bytes across `world_size` ranks.
GlooAllreduce ChooseGlooAllreduce(size_t bytes, int world_size);

// "auto" (or empty) -> nullopt; an algorithm's name -> it; anything else is
// an error quoting the value.
Result<std::optional<GlooAllreduce>> ParseGlooAllreduce(const std::string& text);

}  // namespace muster::runtime
