// Which of Gloo's allreduce algorithms runs a message of a given size.
//
// Both run through gloo::allreduce(AllreduceOptions) with unbound buffers, as
// every other collective of GlooCommunicator does. Gloo's older algorithm
// classes (AllreduceRing, AllreduceHalvingDoubling, ...) bind their buffers
// at construction, which does not fit a call that takes any buffer; they
// are not used.
//
// MUSTER_GLOO_ALLREDUCE=ring|bcube (bcube: power-of-two worlds) overrides the
// choice; "auto" or unset keeps it. ChooseGlooAllreduce's 1 MB threshold
// comes from comparing the two on loopback; to measure it on a machine:
//   MUSTER_GLOO_ALLREDUCE=ring scripts/bench/allreduce.sh
//   MUSTER_GLOO_ALLREDUCE=bcube scripts/bench/allreduce.sh
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "common/status.h"

namespace muster::runtime {

enum class GlooAllreduce {
  kRing,   // Gloo's default: reduce-scatter then allgather around a ring, 1 MB segments
  kBcube,  // recursive exchange in groups; fewer rounds for small messages
};

const char* GlooAllreduceName(GlooAllreduce algorithm);

// The algorithm for `bytes` bytes across `world_size` ranks.
GlooAllreduce ChooseGlooAllreduce(size_t bytes, int world_size);

// "auto" (or empty) -> nullopt; an algorithm's name -> it; anything else is
// an error quoting the value.
Result<std::optional<GlooAllreduce>> ParseGlooAllreduce(const std::string& text);

}  // namespace muster::runtime
