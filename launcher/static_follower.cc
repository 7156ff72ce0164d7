#include "launcher/static_follower.h"

namespace muster {

StaticActions StaticFollower::OnStart() {
  StaticActions out;
  if (state_ != State::kIdle) return out;
  state_ = State::kRunning;
  out.emplace_back(StartAttemptWorkers{attempt_});
  return out;
}

StaticActions StaticFollower::OnStartFailed(bool workers_stopping) {
  StaticActions out;
  if (state_ != State::kRunning) return out;
  if (workers_stopping) {
    // The group stops the workers it did start: muster leaves once they are
    // gone, so none outlives it.
    start_failed_ = true;
    state_ = State::kStopping;
    return out;
  }
  state_ = State::kFinished;
  // 127: as a shell says for a command it cannot run.
  out.emplace_back(Finish{127});
  return out;
}

StaticActions StaticFollower::OnSignal(int sig) {
  StaticActions out;
  if (state_ == State::kFinished) return out;
  signal_ = sig;
  if (WorkersAlive()) {
    // The workers get the signal muster got, as torchrun forwards it (a
    // second one escalates to SIGKILL).
    state_ = State::kStopping;
    out.emplace_back(StopWorkers{sig});
  } else {
    state_ = State::kFinished;
    out.emplace_back(Finish{128 + sig});
  }
  return out;
}

StaticActions StaticFollower::OnWorkersPausing() {
  StaticActions out;
  if (state_ != State::kRunning) return out;
  state_ = State::kRecovering;
  // A recovery in place counts as a restart, as a restart of every worker
  // would (the failure is the same; only its cost differs).
  out.emplace_back(ReportFailureLocally{attempt_, max_restarts_, /*in_place=*/true});
  // The next attempt begins now: start-up is most of a replacement's cost.
  out.emplace_back(StartReplacements{attempt_ + 1});
  return out;
}

StaticActions StaticFollower::OnWorkersPaused() {
  StaticActions out;
  if (state_ != State::kRecovering) return out;
  out.emplace_back(RejoinAttempt{attempt_ + 1});
  return out;
}

void StaticFollower::OnRecoveryEnded(bool recovered) {
  if (state_ != State::kRecovering) return;
  state_ = State::kRunning;
  // Fallen back, the attempt stays: the restart that follows takes the
  // number the recovery began (its early processes are gone by then, so no
  // spawn tag is met twice).
  if (recovered) ++attempt_;
}

void StaticFollower::OnWorkersGone() {
  if (WorkersAlive()) state_ = State::kSettling;
}

StaticActions StaticFollower::OnWorkersSettled(const WorkersOutcome& outcome) {
  StaticActions out;
  if (state_ != State::kSettling) return out;
  state_ = State::kFinished;
  if (start_failed_) {
    out.emplace_back(Finish{127});
    return out;
  }
  switch (outcome.state) {
    case WorkerGroup::State::kSucceeded:
      out.emplace_back(AttemptSucceeded{attempt_});
      out.emplace_back(Finish{0});
      return out;
    case WorkerGroup::State::kInterrupted:
      out.emplace_back(Finish{128 + (signal_ != 0 ? signal_ : outcome.stop_signal)});
      return out;
    default:
      break;
  }
  out.emplace_back(ReportFailureLocally{attempt_, max_restarts_});
  if (attempt_ >= max_restarts_) {
    out.emplace_back(Finish{outcome.root_cause_exit_code.value_or(1)});
    return out;
  }
  state_ = State::kRunning;
  out.emplace_back(StartAttemptWorkers{++attempt_});
  return out;
}

}  // namespace muster
