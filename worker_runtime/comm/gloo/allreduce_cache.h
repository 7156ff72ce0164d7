// GlooAllreduceCache: keeps Gloo allreduce algorithm objects across calls.
//
// Why: building one per call allocates and first-touches its scratch
// buffers (for a 64 MB ring, 128 MB of fresh pages every call), which cost as
// much as the transfer itself on loopback.
//
// Entries are keyed by (count, type, reduction, algorithm), never by the
// caller's pointer: every rank issues the same sequence of collectives, so
// every rank hits or misses the cache on the same call and Gloo's slots stay
// in step; a pointer differs between ranks and would break that. Gloo binds
// the data pointer when an algorithm is built, so:
//   - AllreduceRing (which only reads the pointer in run()) is re-pointed at
//     the caller's data;
//   - the other algorithms run on a staging buffer owned by the entry: the
//     data is copied in and out around run().
// At most `max_entries` entries are kept; the least recently used one goes
// first (the same one on every rank).
//
// Thread-safety: none; owned by one GlooCommunicator.
#pragma once

#include <cstdint>
#include <list>
#include <memory>

#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/comm/gloo/allreduce_algorithm.h"

namespace gloo {
class Context;
}

namespace muster::runtime {

class GlooAllreduceCache {
 public:
  GlooAllreduceCache(std::shared_ptr<gloo::Context> context, size_t max_entries);
  ~GlooAllreduceCache();
  GlooAllreduceCache(const GlooAllreduceCache&) = delete;
  GlooAllreduceCache& operator=(const GlooAllreduceCache&) = delete;

  // In place over `count` elements; kAvg reduces as kSum (the caller divides).
  // REQUIRES: type is kFloat32 or kFloat64; count > 0. Gloo exceptions pass
  // through.
  void Run(void* data, int count, DataType type, ReduceOp op, GlooAllreduce algorithm);

 private:
  struct Entry;

  std::shared_ptr<gloo::Context> context_;
  const size_t max_entries_;
  std::list<std::unique_ptr<Entry>> entries_;  // most recently used first
};

}  // namespace muster::runtime
