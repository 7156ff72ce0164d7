#include "worker_runtime/comm/abort_latch.h"

#include <utility>

namespace muster::runtime {

void AbortLatch::Latch(CommError::Kind kind, std::string reason) {
  if (aborted_) return;
  aborted_ = true;
  kind_ = kind;
  reason_ = std::move(reason);
}

void AbortLatch::ThrowIfAborted(const char* op) const {
  if (!aborted_) return;
  throw CommError(
      kind_, std::string(backend_) + " " + op + ": the communicator is aborted (" + reason_ + ")");
}

}  // namespace muster::runtime
