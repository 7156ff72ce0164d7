// ComputeStragglers: which of a set of ranks is the slow one in lock-step
// training (a node's ranks in its agent: launcher/agent/straggler_watch.h;
// every rank of a run in musterd: run_state_progress.cc), from each rank's
// own compute time per step (the step hooks' "STEP COMPUTE_US" lines:
// launcher/process/warm/step_hooks.py, averaged by the agent and sent on in
// Heartbeat::compute_us). In
// data-parallel training every rank steps at the pace of the slowest, so
// step rates cannot tell it (rendezvous/state/straggler_detector.h); the
// time a rank spends before it waits for the others can.
//
// The rule: each rank's compute time is a moving average of its reports
// (weight kSmoothing); a rank with no report for `stale` is not judged. A
// rank whose average stays above `factor` x the median of the judged ranks
// for `window` is flagged; it is cleared when it is no longer above. At
// least 3 ranks must report (with two, neither is "above the median"). The
// judging itself is rdzv::StragglerDetector's, fed 1/compute as a rate.
//
// Cost: O(n) per Evaluate for n ranks (80,000 in a 10,000-node run of 8:
// docs/benchmarks.md, "With compute times in the heartbeats"). Pure; not
// thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "rendezvous/state/straggler_detector.h"

namespace muster::rdzv {

struct ComputeStragglerRule {
  double factor = 1.5;
  std::chrono::milliseconds window{10'000};
  std::chrono::milliseconds stale{5'000};
};

struct ComputeStragglerChange {
  bool flagged = true;  // false: cleared
  int rank = 0;
  std::optional<double> compute_ms;  // the rank's average at the change
  std::optional<double> median_ms;   // of the judged ranks
};

class ComputeStragglers {
 public:
  static constexpr double kSmoothing = 0.3;

  explicit ComputeStragglers(ComputeStragglerRule rule = {});

  // Global rank `rank` reported a step that took it `compute_ms` itself.
  void OnCompute(int rank, double compute_ms, Time now);
  // Judges the ranks at `now`; returns the flags raised and cleared.
  std::vector<ComputeStragglerChange> Evaluate(Time now);
  // A new set of ranks (a restart, a new generation): forget every rank.
  void Clear();
  // The ranks flagged, as of the last Evaluate(), in rank order.
  std::vector<int> flagged() const;
  bool IsFlagged(int rank) const;
  // Rank `rank`'s average at `now`; nullopt when it has none or its reports
  // went stale.
  std::optional<double> average_ms(int rank, Time now) const;
  // The median of the judged ranks' averages as of the last Evaluate();
  // nullopt when none was judged.
  std::optional<double> median_ms() const;

 private:
  struct Rank {
    double average_ms = 0;
    Time last{};
  };
  ComputeStragglerRule rule_;
  std::map<int, Rank> ranks_;
  rdzv::StragglerDetector detector_;
};

}  // namespace muster::rdzv
