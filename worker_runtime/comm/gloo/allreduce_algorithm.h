// Which allreduce algorithm runs a message of a given size.
//
// A world whose ranks all share one host reduces through shared memory
// (shared_memory_allreduce.h) at every size: on loopback, TCP's kernel copies
// and wake-ups are most of the cost of Gloo's algorithms. Across hosts, one
// of Gloo's two allreduce algorithms. Both run through gloo::allreduce(AllreduceOptions) with
// unbound buffers, as every other collective of GlooCommunicator does. Gloo's older algorithm
// classes (AllreduceRing, AllreduceHalvingDoubling, ...) bind their buffers
// at construction, which does not fit a call that takes any buffer; they
// are not used.
//
// MUSTER_GLOO_ALLREDUCE=ring|bcube|shm (bcube: power-of-two worlds; shm: one
// host) overrides the choice; "auto" or unset keeps it. ChooseGlooAllreduce's
// 1 MB threshold between ring and bcube comes from comparing the two on
// loopback; to measure them on a machine:
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
  kRing,          // Gloo's default: reduce-scatter then allgather around a ring, 1 MB segments
  kBcube,         // recursive exchange in groups; fewer rounds for small messages
  kSharedMemory,  // one host: through a shared segment, not Gloo (SharedMemoryAllreduce)
};

const char* GlooAllreduceName(GlooAllreduce algorithm);

// The algorithm for `bytes` bytes across `world_size` ranks;
// `shared_memory`: whether the ranks have a shared segment (all on one host).
GlooAllreduce ChooseGlooAllreduce(size_t bytes, int world_size, bool shared_memory);

// "auto" (or empty) -> nullopt; an algorithm's name -> it; anything else is
// an error quoting the value.
Result<std::optional<GlooAllreduce>> ParseGlooAllreduce(const std::string& text);

}  // namespace muster::runtime
