// GoodputMeter: how much of a run's wall time trained, as this node saw it:
// the fraction of the run's time in which every one of the node's ranks was
// stepping forward. What counts against it:
//   - time to the first step: from the run's start until every rank of the
//     attempt has reported a step (interpreter start, import, rendezvous,
//     the first step itself);
//   - downtime: from a fault (the attempt's end) until every rank steps
//     again in the next attempt or generation;
//   - redone steps: after a restart, steps at or below the highest step the
//     node had reached are work done again; the time until the node's step
//     passes that mark counts against it;
//   - the tail: from the last step report to the run's end (teardown).
// A rank's step is its newest report; the node's step is the oldest of its
// ranks' (WorkerGroup::NodeStep). The daemon meters a run the same way,
// with the run's step: the oldest of its members' (RunState). A run whose workers report no steps
// has no goodput (nullopt): nothing says when it trained.
//
// Pure; not thread-safe. Tests: tests/unit/rdzv_state_goodput_test.cc.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "common/clock.h"

namespace muster::rdzv {

struct Goodput {
  std::chrono::milliseconds wall{0};
  std::chrono::milliseconds productive{0};
  std::chrono::milliseconds to_first_step{0};  // the first attempt's
  std::chrono::milliseconds downtime{0};       // faults until stepping again
  std::chrono::milliseconds redone{0};         // redoing steps already done
  std::chrono::milliseconds tail{0};           // the last step to the run's end
  int attempts = 0;
  double ratio() const {
    return wall.count() > 0
               ? static_cast<double>(productive.count()) / static_cast<double>(wall.count())
               : 0.0;
  }
};

class GoodputMeter {
 public:
  explicit GoodputMeter(Time started)
      : started_(started), span_start_(started), stood_since_(started) {}

  // An attempt's (or a generation's) workers start. The one before it, if
  // any, ended (OnAttemptEnded).
  void OnAttemptStarted(Time now);
  // The node's step (the oldest of its ranks' newest, nullopt until every
  // rank reported one) after a step report. When this step is the first
  // since the attempt started, returns how long training stood still: from
  // the last step of the attempt before (or the run's start) until now.
  std::optional<std::chrono::milliseconds> OnNodeStep(std::optional<uint64_t> node_step, Time now);
  // The attempt ended: `succeeded`, its workers finished (what follows the
  // last step is the tail), else a fault or a membership change (what
  // follows the last step is downtime).
  void OnAttemptEnded(Time now, bool succeeded);
  // The run ends now: the figures, or nullopt when no step was ever
  // reported.
  std::optional<Goodput> Finish(Time now);
  // The figures as they would be if the run ended now (a live view); the
  // meter goes on unchanged.
  std::optional<Goodput> Peek(Time now) const;

 private:
  // kStarting: not every rank steps yet (the first attempt's start, or
  // downtime after a fault); kRedoing: stepping, at or below the highest
  // step reached before; kProductive: stepping past it; kTail: the workers
  // finished; kDone: Finish ran.
  enum class Phase { kStarting, kRedoing, kProductive, kTail, kDone };
  // Ends the current span at `at`, adding it to its phase's figure.
  void Close(Time at);

  Time started_;
  Phase phase_ = Phase::kStarting;
  Time span_start_;
  Time last_step_at_{};
  Time stood_since_;         // the start of the current kStarting span's standstill
  bool stepped_ = false;     // some step was ever reported
  bool first_start_ = true;  // kStarting counts to the first step, not downtime
  uint64_t high_water_ = 0;  // the highest node step reached
  Goodput totals_;
};

}  // namespace muster::rdzv
