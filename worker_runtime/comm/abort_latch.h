// AbortLatch: the "this communicator is aborted" state every backend keeps.
// The first failure (or Abort()) is latched with its kind and reason; from
// then on ThrowIfAborted() throws a CommError of that kind quoting it.
//
//   latch_.ThrowIfAborted("allreduce");      // before each collective
//   latch_.Latch(kind, "allreduce: ...");    // on the first failure
//
// Thread-safety: none; it lives inside a communicator (one thread at a time).
#pragma once

#include <string>

#include "worker_runtime/comm/communicator.h"

namespace muster::runtime {

class AbortLatch {
 public:
  // `backend` prefixes messages ("gloo", "nccl"); a string literal.
  explicit AbortLatch(const char* backend) : backend_(backend) {}

  bool aborted() const { return aborted_; }
  // Records the first failure; later calls leave it as it is.
  void Latch(CommError::Kind kind, std::string reason);
  // Throws CommError(kind of the first failure) when aborted.
  void ThrowIfAborted(const char* op) const;

 private:
  const char* backend_;
  bool aborted_ = false;
  CommError::Kind kind_ = CommError::Kind::kInternal;
  std::string reason_;
};

}  // namespace muster::runtime
