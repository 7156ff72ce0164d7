#include "launcher/decide/static_follower.h"

#include <string>

namespace muster {

StaticActions StaticFollower::OnStart() {
  StaticActions out;
  if (state_ != State::kIdle) return out;
  state_ = State::kRunning;
  StartAttempt(out);
  return out;
}

ArmInPlace StaticFollower::InPlace() const {
  return {.generation = static_cast<uint64_t>(attempt_), .allowed = RestartLeft()};
}

void StaticFollower::StartAttempt(StaticActions& out) const {
  out.emplace_back(StartAttemptWorkers{attempt_, InPlace()});
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
  out.emplace_back(Finish{kExitCodeCannotStart});
  return out;
}

StaticActions StaticFollower::OnSignal(int sig) {
  StaticActions out;
  if (state_ == State::kFinished) return out;
  signal_ = sig;
  const SignalAnswer answer = AnswerSignal(WorkersAlive(), sig);
  state_ = std::holds_alternative<StopWorkers>(answer) ? State::kStopping : State::kFinished;
  std::visit([&out](const auto& action) { out.emplace_back(action); }, answer);
  return out;
}

StaticActions StaticFollower::OnWorkersPausing(const LocalFailure& /*failure*/) {
  StaticActions out;
  if (state_ != State::kRunning) return out;
  if (!RestartLeft()) {
    // Armed with no restart left, the group does not pause; should it, the
    // failure still ends the job as a restart of every worker would.
    out.emplace_back(AbandonRecovery{"no restart is left (--max-restarts)"});
    return out;
  }
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

StaticActions StaticFollower::OnRecoveryEnded(bool recovered) {
  StaticActions out;
  if (state_ != State::kRecovering) return out;
  state_ = State::kRunning;
  // Fallen back, the attempt stays: the restart that follows takes the
  // number the recovery began (its early processes are gone by then, so no
  // spawn tag is met twice).
  if (!recovered) return out;
  ++attempt_;
  out.emplace_back(InPlace());
  return out;
}

void StaticFollower::OnWorkersGone() {
  if (WorkersAlive()) state_ = State::kSettling;
}

StaticActions StaticFollower::OnWorkersSettled(const WorkersOutcome& outcome) {
  StaticActions out;
  if (state_ != State::kSettling) return out;
  state_ = State::kFinished;
  if (start_failed_) {
    out.emplace_back(Finish{kExitCodeCannotStart});
    return out;
  }
  switch (outcome.state) {
    case WorkerGroup::State::kSucceeded:
      out.emplace_back(AttemptSucceeded{attempt_});
      out.emplace_back(Finish{0});
      return out;
    case WorkerGroup::State::kInterrupted:
      out.emplace_back(Finish{ExitCodeOfSignal(signal_)});
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
  ++attempt_;
  StartAttempt(out);
  return out;
}

}  // namespace muster
