// OutcomeReport: the last worker outcome (WorkersSucceeded or WorkerFailed)
// an agent reported, kept so that the client can send it again after it
// reconnects: a report issued while the connection is down would otherwise be
// lost, and the daemon would wait for it forever.
//
// Pure bookkeeping, no I/O; not thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "rendezvous/protocol/messages.h"

namespace muster::rdzv {

class OutcomeReport {
 public:
  // Keeps `report` (for `generation`), replacing any earlier one.
  void Record(uint64_t generation, Message report);
  // A generation newer than the kept report's began: that outcome is moot.
  void ForgetBefore(uint64_t generation);
  void Clear() { kept_.reset(); }
  // The report to send again after the next Join; nullptr when none.
  const Message* pending() const { return kept_ ? &kept_->report : nullptr; }

 private:
  struct Kept {
    uint64_t generation = 0;
    Message report;
  };
  std::optional<Kept> kept_;
};

}  // namespace muster::rdzv
