#include "rendezvous/client/outcome_report.h"

#include <utility>

namespace muster::rdzv {

void OutcomeReport::Record(uint64_t generation, Message report) {
  kept_ = Kept{generation, std::move(report)};
}

void OutcomeReport::ForgetBefore(uint64_t generation) {
  if (kept_ && kept_->generation < generation) kept_.reset();
}

}  // namespace muster::rdzv
