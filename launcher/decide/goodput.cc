#include "launcher/decide/goodput.h"

#include <algorithm>

namespace muster {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

void GoodputMeter::Close(Time at) {
  const auto span = duration_cast<milliseconds>(std::max(at, span_start_) - span_start_);
  switch (phase_) {
    case Phase::kStarting:
      (first_start_ ? totals_.to_first_step : totals_.downtime) += span;
      break;
    case Phase::kRedoing:
      totals_.redone += span;
      break;
    case Phase::kProductive:
      totals_.productive += span;
      break;
    case Phase::kTail:
      totals_.tail += span;
      break;
    case Phase::kDone:
      break;
  }
  span_start_ = std::max(at, span_start_);
}

void GoodputMeter::OnAttemptStarted(Time now) {
  if (phase_ == Phase::kDone) return;
  if (phase_ == Phase::kTail) phase_ = Phase::kStarting;  // a membership change after success
  Close(now);
  phase_ = Phase::kStarting;
  ++totals_.attempts;
}

void GoodputMeter::OnNodeStep(std::optional<uint64_t> node_step, Time now) {
  if (!node_step || phase_ == Phase::kDone) return;
  stepped_ = true;
  last_step_at_ = now;
  if (phase_ != Phase::kProductive) {
    const Phase next = *node_step > high_water_ ? Phase::kProductive : Phase::kRedoing;
    if (next != phase_) {
      Close(now);
      if (phase_ == Phase::kStarting) first_start_ = false;
      phase_ = next;
    }
  }
  high_water_ = std::max(high_water_, *node_step);
}

void GoodputMeter::OnAttemptEnded(Time now, bool succeeded) {
  if (phase_ == Phase::kDone || phase_ == Phase::kTail) return;
  // Training stopped at the last step: what follows is the tail of a
  // finished run, or downtime (the fault, its detection, the stop).
  if (phase_ == Phase::kProductive) Close(last_step_at_);
  if (phase_ != Phase::kStarting) first_start_ = false;
  phase_ = succeeded ? Phase::kTail : Phase::kStarting;
  Close(now);
}

std::optional<Goodput> GoodputMeter::Finish(Time now) {
  if (phase_ != Phase::kDone) {
    if (phase_ == Phase::kProductive) {
      Close(last_step_at_);
      phase_ = Phase::kTail;
    }
    Close(now);
    phase_ = Phase::kDone;
    totals_.wall = duration_cast<milliseconds>(now - started_);
  }
  if (!stepped_) return std::nullopt;
  return totals_;
}

}  // namespace muster
