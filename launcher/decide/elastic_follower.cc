#include "launcher/decide/elastic_follower.h"

#include <csignal>
#include <utility>

namespace muster {

FollowerActions ElasticFollower::OnAssignment(const rdzv::Assignment& assignment) {
  FollowerActions out;
  if (state_ == State::kFinished) return out;
  if (ran_generation_ && assignment.generation <= *ran_generation_) {
    // Workers never start twice for one generation.
    if (assignment.generation < *ran_generation_) return out;  // stale
    // Still running or settling: the outcome is reported when they are done.
    if (state_ != State::kIdle) return out;
    // Already done here: say so again, since a restarted daemon forgot it.
    if (ran_generation_succeeded_) {
      out.emplace_back(ReportSucceeded{assignment.generation, /*repeated=*/true});
    } else {
      out.emplace_back(ReportFailure{assignment.generation, failure_exit_code(),
                                     "the workers of generation " +
                                         std::to_string(assignment.generation) +
                                         " already stopped on this node"});
    }
    return out;
  }
  pending_ = assignment;
  if (state_ == State::kPaused) {
    Rejoin(assignment, out);
  } else if (WorkersAlive()) {
    // Two generations never run at once: the new one waits for this one's
    // end (kPausing: it is ending).
    EndCurrent(out);
  } else if (state_ == State::kIdle) {
    Start(assignment, out);
  }
  // kSettling: OnWorkersSettled starts the pending generation.
  return out;
}

FollowerActions ElasticFollower::OnWaiting() {
  FollowerActions out;
  if (state_ == State::kFinished) return out;
  pending_.reset();
  // The generation is ending everywhere: its workers lose the store now,
  // and the next one meets an empty store.
  out.emplace_back(SealStore{});
  if (WorkersAlive()) EndCurrent(out);
  return out;
}

void ElasticFollower::EndCurrent(FollowerActions& out) {
  if (state_ == State::kPausing || state_ == State::kPaused) return;
  if (state_ == State::kRunning && workers_can_pause_) {
    state_ = State::kPausing;
    out.emplace_back(PauseWorkers{});
    return;
  }
  Stop(StopReason::kReassigned, SIGTERM, out);
}

FollowerActions ElasticFollower::OnWorkersPausing(const LocalFailure& failure) {
  FollowerActions out;
  if (state_ == State::kFinished) return out;
  // The job's failure restarts are the daemon's count, not the generation
  // number (membership changes make generations too). A worker that fails
  // while a pause the follower asked for is under way, or while the workers
  // wait paused for the next generation (no assignment is current then), is
  // reported too, with the count of the last assignment they ran under.
  out.emplace_back(ReportFailureLocally{restart_count_, max_restarts_, /*in_place=*/true});
  if (state_ != State::kRunning || !current_) return out;
  state_ = State::kPausing;
  root_cause_exit_code_ = failure.exit_code;
  pause_failure_ = ReportFailure{current_->generation, failure.exit_code, failure.message};
  return out;
}

FollowerActions ElasticFollower::OnWorkersPaused() {
  FollowerActions out;
  // The workers may have paused with no local failure, the follower still
  // running (a hang probe every one of them answered: the hang is another
  // node's). They no longer step in the current generation either: the
  // pause goes on as one the follower asked for, with no failure to report.
  if (state_ == State::kRunning && current_) state_ = State::kPausing;
  if (state_ != State::kPausing) return out;
  // The daemon hears of a local failure only now: it counts as this node's
  // workers gone, and the next generation must not form under a worker that
  // still steps.
  if (pause_failure_) out.emplace_back(*std::exchange(pause_failure_, std::nullopt));
  if (current_) DropCurrent(out);
  if (run_ended_) {
    Stop(StopReason::kRunEnded, SIGTERM, out);
  } else if (pending_) {
    Rejoin(*pending_, out);
  } else {
    state_ = State::kPaused;
  }
  return out;
}

void ElasticFollower::Rejoin(const rdzv::Assignment& assignment, FollowerActions& out) {
  RunGeneration(assignment);
  out.emplace_back(RejoinWorkers{assignment});
}

FollowerActions ElasticFollower::OnFence() {
  FollowerActions out;
  if (state_ == State::kFinished) return out;
  pending_.reset();
  current_.reset();
  out.emplace_back(ClearCurrent{});
  out.emplace_back(SealStore{});
  // SIGKILL, not SIGTERM: the daemon may give these ranks away any moment,
  // and two generations must never train at once.
  if (WorkersAlive()) Stop(StopReason::kFenced, SIGKILL, out);
  return out;
}

FollowerActions ElasticFollower::OnRunEnded(bool succeeded) {
  if (state_ != State::kFinished) run_succeeded_ = succeeded;
  return RunIsOver();
}

FollowerActions ElasticFollower::OnRendezvousFailed() {
  // run_succeeded_ stays as an earlier RunEnded left it: false unless the
  // daemon said the run succeeded before it went out of reach.
  return RunIsOver();
}

FollowerActions ElasticFollower::RunIsOver() {
  FollowerActions out;
  if (state_ == State::kFinished) return out;
  run_ended_ = true;
  if (WorkersAlive()) {
    Stop(StopReason::kRunEnded, SIGTERM, out);
  } else if (state_ == State::kIdle) {
    EndRun(out);
  }
  // kSettling: OnWorkersSettled ends the run.
  return out;
}

FollowerActions ElasticFollower::OnSignal(int sig) {
  FollowerActions out;
  if (state_ == State::kFinished) return out;
  signal_ = sig;
  out.emplace_back(LeaveRendezvous{});
  // Once stopped workers are gone, muster exits for the signal: it
  // outranks every other reason to stop.
  const SignalAnswer answer = AnswerSignal(WorkersAlive(), sig);
  if (const auto* stop = std::get_if<StopWorkers>(&answer)) {
    Stop(StopReason::kSignal, stop->signal, out);
  } else {
    state_ = State::kFinished;
    out.emplace_back(std::get<Finish>(answer));
  }
  return out;
}

FollowerActions ElasticFollower::OnStartFailed(const std::string& message, bool workers_stopping) {
  FollowerActions out;
  if (state_ != State::kRunning) return out;
  if (workers_stopping) {
    // The group is stopping the workers it did start: report once they are
    // gone, so the daemon never forms the next generation under them.
    start_failure_ = message;
    return out;
  }
  const uint64_t generation = current_->generation;
  current_.reset();
  state_ = State::kIdle;
  out.emplace_back(ClearCurrent{});
  out.emplace_back(ReportFailure{generation, kExitCodeCannotStart, message});
  return out;
}

void ElasticFollower::OnWorkersGone() {
  // A recovery that fell back: the outcome, once settled, says what failed.
  pause_failure_.reset();
  if (WorkersAlive()) state_ = State::kSettling;
}

FollowerActions ElasticFollower::OnRecoveryEnded(bool recovered) {
  FollowerActions out;
  // Recovered: the next failure of the generation the survivors joined may
  // be recovered in place too.
  if (recovered && state_ == State::kRunning && current_) {
    out.emplace_back(InPlaceFor(*current_));
  }
  return out;
}

FollowerActions ElasticFollower::OnWorkersSettled(const WorkersOutcome& outcome) {
  FollowerActions out;
  if (state_ != State::kSettling) return out;
  const StopReason reason = std::exchange(stop_reason_, StopReason::kNone);
  const std::optional<std::string> start_failure = std::exchange(start_failure_, std::nullopt);
  if (reason == StopReason::kSignal) {
    state_ = State::kFinished;
    out.emplace_back(Finish{ExitCodeOfSignal(signal_)});
    return out;
  }
  const bool failed_on_its_own =
      outcome.state == WorkerGroup::State::kFailed && reason == StopReason::kNone && current_;
  if (outcome.state == WorkerGroup::State::kSucceeded && current_) {
    // Succeeded even if a stop came too late to matter: the daemon counts it.
    ran_generation_succeeded_ = true;
    out.emplace_back(ReportSucceeded{current_->generation, /*repeated=*/false});
  } else if (failed_on_its_own && start_failure) {
    out.emplace_back(ReportFailure{current_->generation, kExitCodeCannotStart, *start_failure});
    DropCurrent(out);
  } else if (failed_on_its_own) {
    if (outcome.root_cause_exit_code) root_cause_exit_code_ = outcome.root_cause_exit_code;
    if (outcome.root_cause_exit_code) {
      out.emplace_back(ReportFailureLocally{current_->restart_count, current_->max_restarts});
    }
    out.emplace_back(ReportFailure{current_->generation, failure_exit_code(), outcome.root_cause});
    // The generation failed: whatever comes next starts from an empty store.
    out.emplace_back(SealStore{});
    DropCurrent(out);
  } else if (reason != StopReason::kNone) {
    // This node stopped them (new generation, fence, run's end): their
    // outcome is not news to the daemon, which asked for it.
    DropCurrent(out);
  }
  if (run_ended_) {
    EndRun(out);
    return out;
  }
  if (pending_) {
    Start(*pending_, out);
    return out;
  }
  state_ = State::kIdle;
  return out;
}

void ElasticFollower::Stop(StopReason reason, int sig, FollowerActions& out) {
  pause_failure_.reset();
  // Recorded for stop_reason() and for the signal's exit code: a signal
  // outranks everything, a fence or the run's end a reassignment. What comes
  // after the stop is not decided by the reason but by OnFence dropping
  // the pending generation and by run_ended_ being checked before it.
  if (stop_reason_ != StopReason::kSignal &&
      (stop_reason_ == StopReason::kNone || reason != StopReason::kReassigned)) {
    stop_reason_ = reason;
  }
  state_ = State::kStopping;
  out.emplace_back(StopWorkers{sig});
}

void ElasticFollower::Start(const rdzv::Assignment& assignment, FollowerActions& out) {
  RunGeneration(assignment);
  out.emplace_back(StartWorkers{assignment, InPlaceFor(assignment)});
}

ArmInPlace ElasticFollower::InPlaceFor(const rdzv::Assignment& assignment) {
  // `pause` names the generation; the daemon decides whether a failure
  // restarts, so a recovery in place is always allowed here.
  return {.generation = assignment.generation,
          .allowed = true,
          .hangs_elsewhere = assignment.group_world_size > 1};
}

void ElasticFollower::RunGeneration(const rdzv::Assignment& assignment) {
  pending_.reset();
  current_ = assignment;
  restart_count_ = assignment.restart_count;
  max_restarts_ = assignment.max_restarts;
  ran_generation_ = assignment.generation;
  ran_generation_succeeded_ = false;
  stop_reason_ = StopReason::kNone;
  state_ = State::kRunning;
}

void ElasticFollower::DropCurrent(FollowerActions& out) {
  current_.reset();
  out.emplace_back(ClearCurrent{});
}

void ElasticFollower::EndRun(FollowerActions& out) {
  state_ = State::kFinished;
  out.emplace_back(Finish{run_succeeded_ ? 0 : failure_exit_code()});
}

}  // namespace muster
