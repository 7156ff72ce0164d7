// Element-wise arithmetic on host buffers that the Gloo backend needs around
// Gloo's own reductions: ReduceOp::kAvg is a sum followed by a division by
// the world size (Gloo has no average).
//
// Thread-safety: pure functions over the caller's memory.
#pragma once

#include <cstddef>

#include "worker_runtime/comm/communicator.h"

namespace muster::runtime {

// data[i] /= divisor for `count` elements of `type`.
// REQUIRES: type is kFloat32 or kFloat64; divisor > 0. Throws CommError
// (kInvalidArgument) for a 16-bit type.
void DivideInPlace(void* data, size_t count, DataType type, int divisor);

}  // namespace muster::runtime
