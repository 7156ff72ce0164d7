#include "rendezvous/state/goodput.h"

#include <algorithm>

namespace muster::rdzv {

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
  // An attempt that was not said to end ended now, by a fault.
  if (phase_ == Phase::kProductive || phase_ == Phase::kRedoing) OnAttemptEnded(now, false);
  if (phase_ == Phase::kTail) {  // a membership change after success
    phase_ = Phase::kStarting;
    stood_since_ = now;
  }
  Close(now);
  phase_ = Phase::kStarting;
  ++totals_.attempts;
}

std::optional<milliseconds> GoodputMeter::OnNodeStep(std::optional<uint64_t> node_step, Time now) {
  if (!node_step || phase_ == Phase::kDone) return std::nullopt;
  std::optional<milliseconds> stood;
  if (phase_ == Phase::kStarting) stood = duration_cast<milliseconds>(now - stood_since_);
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
  return stood;
}

void GoodputMeter::OnAttemptEnded(Time now, bool succeeded) {
  if (phase_ == Phase::kDone || phase_ == Phase::kTail) return;
  // Training stopped at the last step: what follows is the tail of a
  // finished run, or downtime (the fault, its detection, the stop).
  if (phase_ == Phase::kProductive) Close(last_step_at_);
  // Training stood still since its last step (or since the standstill
  // that was already running, when the attempt never stepped).
  if (phase_ != Phase::kStarting) stood_since_ = stepped_ ? last_step_at_ : span_start_;
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

std::optional<Goodput> GoodputMeter::Peek(Time now) const {
  GoodputMeter copy = *this;
  return copy.Finish(now);
}

}  // namespace muster::rdzv
