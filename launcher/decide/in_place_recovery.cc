#include "launcher/decide/in_place_recovery.h"

namespace muster {
namespace {

double MillisecondsBetween(Time from, Time to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

RecoveryView RecoveryViewOf(const WorkerGroup& group) {
  return {.state = group.state(),
          .joining = group.joining(),
          .failure_known = !group.failures().empty(),
          .ready_to_join = group.ready_to_join(),
          .fell_back = !group.fallback_reason().empty()};
}

RecoverySteps InPlaceRecovery::OnGroupEvent(const RecoveryView& view, Time now) {
  RecoverySteps out;
  const bool recovering = view.state == WorkerGroup::State::kRecovering;
  if (recovering && !began_) {
    began_ = now;
    paused_reported_ = false;
    failure_handled_ = false;
    replacements_started_ = 0;
    out.emplace_back(PauseBegan{});
  } else if (rejoin_sent_ && recovering && !view.joining) {
    // The generation the survivors were joining ended first (PauseAll):
    // this recovery pauses again, and its failure stays handled. The
    // follower hears of the new pause once they are all paused.
    rejoin_sent_.reset();
    paused_reported_ = false;
    out.emplace_back(PauseBegan{.during_join = true});
  }
  // The failure is known at the start, or (a hang probe) once the workers
  // that did not answer are killed.
  if (began_ && recovering && !failure_handled_ && view.failure_known) {
    failure_handled_ = true;
    out.emplace_back(FailureKnown{});
    return out;  // what the agent does about it changes the group
  }
  if (!began_) return out;
  if (view.ready_to_join) {
    if (!paused_reported_) {
      paused_reported_ = true;
      out.emplace_back(SurvivorsPaused{});
    }
    return out;
  }
  if (recovering) return out;
  RecoveryEnded ended;
  if (view.state == WorkerGroup::State::kRunning) {
    ended.how = RecoveryEnded::How::kRecovered;
  } else {
    // No fallback reason: stopped from outside (a signal, the run's end, a
    // fence).
    ended.how = view.fell_back ? RecoveryEnded::How::kFellBack : RecoveryEnded::How::kAbandoned;
  }
  ended.paused_ms = MillisecondsBetween(*began_, rejoin_sent_.value_or(now));
  ended.total_ms = MillisecondsBetween(*began_, now);
  out.emplace_back(ended);
  began_.reset();
  rejoin_sent_.reset();
  return out;
}

}  // namespace muster
