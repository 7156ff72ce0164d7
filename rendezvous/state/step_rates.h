// Step rates: how fast a node trains, from the steps its heartbeats carry
// (Heartbeat::step, the oldest of its local workers' newest steps), and the
// run's median over the nodes that report.
//
// StepRate is one node's: Record() takes each heartbeat's (generation, step,
// now); PerSecond() is the steps per second over about the last kWindow:
// (newest step - step of the oldest kept sample within kWindow) / the time
// between them. It keeps a fixed ring of samples, at least kWindow / kSamples
// apart, so a heartbeat costs O(1) and allocates nothing (the daemon records
// 20,000 a second at 10,000 nodes).
//
// Robust to a counter that starts again: a heartbeat of another generation,
// or a step below the newest one (workers restarted), drops the history, and
// the rate is unknown until kMinSpan of new samples. A heartbeat without a
// step (0) changes nothing unless it names another generation. A node whose
// workers stop stepping while its agent heart-beats keeps sending the same
// step: its rate falls to 0 within kWindow.
//
// Resolution: a node that steps less often than once per kWindow shows 0 between
// steps.
//
// Pure: time comes in as arguments. Not thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/clock.h"

namespace muster::rdzv {

class StepRate {
 public:
  // The span the rate is measured over, at most.
  static constexpr std::chrono::milliseconds kWindow{5'000};
  // The rate is unknown until the samples span at least this.
  static constexpr std::chrono::milliseconds kMinSpan{1'000};
  static constexpr size_t kSamples = 8;

  // A heartbeat of `generation` at `now` carried `step` (0: none).
  void Record(uint64_t generation, uint64_t step, Time now);
  // Steps per second over about the last kWindow; nullopt while unknown (no
  // step reported in this generation, or not yet kMinSpan of samples).
  std::optional<double> PerSecond() const;
  // Forgets every sample (the node left the generation).
  void Reset();

 private:
  struct Sample {
    uint64_t step = 0;
    Time at{};
  };
  uint64_t generation_ = 0;
  bool reported_ = false;
  Sample newest_;                        // the latest report, kept at every heartbeat
  std::array<Sample, kSamples> ring_{};  // older samples, kWindow / kSamples apart at least
  size_t ring_size_ = 0;
  size_t ring_next_ = 0;  // where the next sample goes (the oldest once full)
};

// The median of `rates` (the mean of the two middle ones for an even count);
// nullopt when empty. Reorders `rates`. O(n).
std::optional<double> MedianRate(std::vector<double>& rates);

}  // namespace muster::rdzv
