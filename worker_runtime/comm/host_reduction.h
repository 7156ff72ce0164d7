// Element-wise arithmetic on host buffers for the Gloo backend: the
// reduction of two buffers that Gloo's allreduce and the shared-memory
// allreduce both apply, and the division that turns a sum into
// ReduceOp::kAvg (Gloo has no average).
//
// Thread-safety: pure functions over the caller's memory.
#pragma once

#include <cstddef>

#include "worker_runtime/comm/communicator.h"

namespace muster::runtime {

// out[i] = op(a[i], b[i]) for `count` elements; `a` may be `out`. Gloo's
// own element-wise functions (gloo/math.h); kAvg reduces as kSum.
using ElementwiseReduction = void (*)(void* out, const void* a, const void* b, size_t count);

// The reduction of `op` over `type`. Throws CommError (kInvalidArgument) for
// a 16-bit type.
ElementwiseReduction ElementwiseFor(DataType type, ReduceOp op);

// data[i] /= divisor for `count` elements of `type`.
// REQUIRES: type is kFloat32 or kFloat64; divisor > 0. Throws CommError
// (kInvalidArgument) for a 16-bit type.
void DivideInPlace(void* data, size_t count, DataType type, int divisor);

}  // namespace muster::runtime
