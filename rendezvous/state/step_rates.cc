#include "rendezvous/state/step_rates.h"

#include <algorithm>

namespace muster::rdzv {

void StepRate::Record(uint64_t generation, uint64_t step, Time now) {
  // Steps count from the start of a generation's workers: a new generation,
  // or a count that went back (workers restarted in it), starts afresh.
  if (generation != generation_ || (reported_ && step != 0 && step < newest_.step)) {
    Reset();
    generation_ = generation;
  }
  if (step == 0) return;
  newest_ = Sample{step, now};
  reported_ = true;
  // A sample per kWindow / kSamples at most: the ring then spans the window
  // whatever the heartbeat interval, in a fixed size.
  if (ring_size_ > 0) {
    const Sample& last = ring_[(ring_next_ + kSamples - 1) % kSamples];
    if (now - last.at < kWindow / kSamples) return;
  }
  ring_[ring_next_] = newest_;
  ring_next_ = (ring_next_ + 1) % kSamples;
  ring_size_ = std::min(ring_size_ + 1, kSamples);
}

std::optional<double> StepRate::PerSecond() const {
  if (!reported_) return std::nullopt;
  // The oldest sample still inside the window, measured from the newest report.
  const Sample* base = nullptr;
  for (size_t i = 0; i < ring_size_; ++i) {
    const Sample& s = ring_[(ring_next_ + kSamples - ring_size_ + i) % kSamples];
    if (newest_.at - s.at <= kWindow) {
      base = &s;
      break;
    }
  }
  if (base == nullptr || newest_.at - base->at < kMinSpan) return std::nullopt;
  const double seconds = std::chrono::duration<double>(newest_.at - base->at).count();
  return static_cast<double>(newest_.step - base->step) / seconds;
}

void StepRate::Reset() {
  generation_ = 0;
  reported_ = false;
  newest_ = Sample{};
  ring_size_ = 0;
  ring_next_ = 0;
}

std::optional<double> MedianRate(std::vector<double>& rates) {
  if (rates.empty()) return std::nullopt;
  const size_t middle = rates.size() / 2;
  std::nth_element(rates.begin(), rates.begin() + static_cast<std::ptrdiff_t>(middle), rates.end());
  const double upper = rates[middle];
  if (rates.size() % 2 == 1) return upper;
  // The lower middle is the largest of the half before it.
  const double lower =
      *std::max_element(rates.begin(), rates.begin() + static_cast<std::ptrdiff_t>(middle));
  return (lower + upper) / 2;
}

}  // namespace muster::rdzv
