// WorkerGroup's in-place recovery (worker_group.h): pause the survivors of a
// failure, rejoin them to the next generation beside replacements of the
// failed ranks, or fall back to stopping everyone.
#include <algorithm>
#include <csignal>
#include <utility>

#include "launcher/process/worker_group.h"

namespace muster {

void WorkerGroup::EnableInPlace(const InPlaceOptions& options, bool allowed) {
  in_place_ = options;
  in_place_allowed_ = allowed;
}

bool WorkerGroup::BeginRecovery(Time now) {
  if (!in_place_ || !in_place_allowed_) return false;
  // Every worker must speak the channel, the failed one too (its
  // replacement runs the same program), and every other one must still run:
  // a worker that already finished cannot rejoin.
  // A worker hang detection just killed counts as exited.
  int exited = 0;
  for (const auto& w : workers_) {
    if (!w.in_place) return false;
    if (!w.running || w.killed_as_hung) ++exited;
  }
  if (exited != 1) return false;
  failed_local_ranks_.clear();
  for (const auto& w : workers_) {
    if (!w.running || w.killed_as_hung) failed_local_ranks_.push_back(w.spec.local_rank);
  }
  PauseRunning(now);
  return true;
}

std::vector<int> WorkerGroup::local_ranks_not_in_place() const {
  std::vector<int> ranks;
  for (const auto& w : workers_) {
    if (!w.in_place) ranks.push_back(w.spec.local_rank);
  }
  return ranks;
}

bool WorkerGroup::CanPauseAll() const {
  // Joining: the generation being joined can end before every worker
  // joined it (a node elsewhere died meanwhile). A worker leaves it as it
  // would a running one: its join is cut short and it answers the pause.
  if (!in_place_ || (state_ != State::kRunning && !joining())) return false;
  for (const auto& w : workers_) {
    if (!w.running || !w.in_place) return false;
  }
  return !workers_.empty();
}

bool WorkerGroup::PauseAll(Time now) {
  if (!CanPauseAll()) return false;
  if (joining()) {
    // They leave the generation they were told to join, whether or not
    // they joined it yet. A process started for it holds no state of its
    // own but is as alive as the rest: it pauses and rejoins with them.
    in_place_->generation = joining_generation_;
    for (auto& w : workers_) w.replacement = false;
  }
  failed_local_ranks_.clear();
  PauseRunning(now);
  return true;
}

void WorkerGroup::PauseRunning(Time now) {
  state_ = State::kRecovering;
  rejoined_ = false;
  waiting_for_remote_hang_ = false;
  fallback_reason_.clear();
  recover_deadline_ = now + in_place_->timeout;
  const std::string pause =
      control::FormatAgentMessage(control::Pause{in_place_->generation}) + "\n";
  for (auto& w : workers_) {
    if (!w.running || w.killed_as_hung) continue;
    w.phase = Phase::kPausing;
    if (!Send(w, pause, now)) break;
  }
}

bool WorkerGroup::BeginHangProbe(Worker& suspect, Time now, WallTime wall) {
  if (!in_place_allowed_ || !CanPauseAll()) return false;
  failed_local_ranks_.clear();
  PauseRunning(now);
  hang_suspect_ = suspect.spec.local_rank;
  hang_wall_ = wall;
  recover_deadline_ = now + std::min(in_place_->timeout, kHangProbe);
  return true;
}

void WorkerGroup::OnRecoveryDeadline(Time now, WallTime wall) {
  std::vector<Worker*> silent;
  bool any_paused = false;
  for (auto& w : workers_) {
    if (!w.running || w.replacement || w.killed_as_hung) continue;
    if (w.phase == Phase::kPaused) any_paused = true;
    if (w.phase == Phase::kPausing) silent.push_back(&w);
  }
  // Set only once every worker paused, and cleared by a rejoin or a new pause.
  if (std::exchange(waiting_for_remote_hang_, false)) {
    FallBack(
        "paused for a hang on another node, and no next generation came within the recovery "
        "timeout",
        now);
    return;
  }
  if (rejoined_ || !any_paused || silent.empty()) {
    FallBack("a worker did not answer within the recovery timeout", now);
    return;
  }
  // Stuck where no pause reaches it: hung. It is killed and started again;
  // the others go on in place.
  for (Worker* w : silent) {
    KillHung(*w, now, wall);
    failed_local_ranks_.push_back(w->spec.local_rank);
  }
  hang_suspect_.reset();
  // Their exits make the group ready to join; that is bounded too.
  recover_deadline_ = now + in_place_->timeout;
}

void WorkerGroup::KillHangSuspect() {
  for (auto& w : workers_) {
    if (!w.running || w.spec.local_rank != *hang_suspect_) continue;
    // Killed with a steady time of its last progress: the report's silence
    // is the hang timeout's.
    KillHung(w, *w.last_progress + HangTimeoutOf(w), hang_wall_);
    failed_local_ranks_.push_back(w.spec.local_rank);
  }
  hang_suspect_.reset();
}

void WorkerGroup::OnExitWhileRecovering(Worker& worker, ExitStatus status, Time now,
                                        WallTime wall) {
  if (std::exchange(worker.killed_as_hung, false)) return;  // counted when it was killed
  if (!status.success()) failures_.push_back(FailureOf(worker, status, wall));
  if (rejoined_ || worker.replacement) {
    // The new generation is forming around it: it cannot be replaced now.
    FallBack("rank " + std::to_string(worker.spec.global_rank) + " exited during the join", now);
    return;
  }
  // Still pausing: one more rank to start again.
  if (std::find(failed_local_ranks_.begin(), failed_local_ranks_.end(), worker.spec.local_rank) ==
      failed_local_ranks_.end()) {
    failed_local_ranks_.push_back(worker.spec.local_rank);
  }
}

bool WorkerGroup::Send(Worker& worker, const std::string& line, Time now) {
  if (Status s = spawner_.SendControl(worker.tag, line); !s.ok()) {
    FallBack("cannot tell rank " + std::to_string(worker.spec.global_rank) + ": " + s.message(),
             now);
    return false;
  }
  return true;
}

void WorkerGroup::OnControl(uint64_t tag, const control::WorkerMessage& message, Time now) {
  Worker* w = Find(tag);
  if (w == nullptr) return;
  if (const auto* hello = std::get_if<control::Hello>(&message)) {
    w->in_place = control::CanRecoverInPlace(*hello);
    return;
  }
  if (state_ != State::kRecovering) return;
  if (const auto* ready = std::get_if<control::Ready>(&message)) {
    if (w->phase == Phase::kPausing && ready->generation == in_place_->generation) {
      w->phase = Phase::kPaused;
      if (ready_to_join() && hang_suspect_ && in_place_->hangs_elsewhere) {
        // Every local worker answered: none of them is hung here. The hang
        // is another node's, whose agent kills it and ends the generation;
        // these wait paused for the next one, bounded.
        hang_suspect_.reset();
        waiting_for_remote_hang_ = true;
        recover_deadline_ = now + in_place_->timeout;
      } else if (ready_to_join() && hang_suspect_) {
        KillHangSuspect();
        recover_deadline_ = now + in_place_->timeout;  // for its exit
      } else if (ready_to_join()) {
        // Paused: what comes next is the agent's (the daemon may take its
        // time to form the next generation); Rejoin bounds the join again.
        recover_deadline_.reset();
      }
    }
  } else if (const auto* joined = std::get_if<control::Joined>(&message)) {
    if (w->phase == Phase::kJoining && joined->generation == joining_generation_) {
      w->phase = Phase::kStepping;
      // The pause was no hang: the silence starts now.
      w->last_progress = now;
      MaybeRecovered();
    }
  } else if (const auto* failed = std::get_if<control::Failed>(&message)) {
    FallBack("rank " + std::to_string(w->spec.global_rank) +
                 " could not recover in place: " + failed->reason,
             now);
  }
}

bool WorkerGroup::ready_to_join() const {
  if (state_ != State::kRecovering || rejoined_) return false;
  bool any = false;
  for (const auto& w : workers_) {
    if (!w.running || w.replacement) continue;
    // One being killed must be gone before its rank starts again.
    if (w.phase != Phase::kPaused || w.killed_as_hung) return false;
    any = true;
  }
  return any;
}

std::vector<int> WorkerGroup::failed_local_ranks() const { return failed_local_ranks_; }

std::vector<int> WorkerGroup::paused_local_ranks() const {
  std::vector<int> paused;
  for (const auto& w : workers_) {
    if (w.running && !w.replacement && w.phase == Phase::kPaused) {
      paused.push_back(w.spec.local_rank);
    }
  }
  return paused;
}

pid_t WorkerGroup::PidOf(int local_rank) const {
  for (const auto& w : workers_) {
    if (w.running && w.spec.local_rank == local_rank) return w.pid;
  }
  return 0;
}

Status WorkerGroup::StartReplacements(std::vector<WorkerSpec> replacements, Time now) {
  for (auto& spec : replacements) {
    for (auto& w : workers_) {
      if (w.running || w.spec.local_rank != spec.local_rank) continue;
      w.spec = std::move(spec);
      if (Status s = SpawnInto(w); !s.ok()) {
        FallBack(
            "cannot start rank " + std::to_string(w.spec.global_rank) + " again: " + s.message(),
            now);
        return s;
      }
      w.replacement = true;
      std::erase(failed_local_ranks_, w.spec.local_rank);
      break;
    }
  }
  return Status::Ok();
}

Status WorkerGroup::Rejoin(const std::vector<Rejoining>& survivors,
                           std::vector<WorkerSpec> replacements, Time now) {
  rejoined_ = true;
  waiting_for_remote_hang_ = false;
  recover_deadline_ = now + in_place_->timeout;
  joining_generation_ = survivors.empty() ? 0 : survivors.front().join.generation;
  for (const auto& r : survivors) {
    for (auto& w : workers_) {
      if (!w.running || w.spec.local_rank != r.local_rank) continue;
      w.phase = Phase::kJoining;
      // Its first step in the new generation ends the recovery, not a step.
      w.steps.Interrupt();
      if (!Send(w, control::FormatAgentMessage(r.join) + "\n", now)) {
        return Status::IoError(fallback_reason_);
      }
    }
  }
  if (Status s = StartReplacements(std::move(replacements), now); !s.ok()) return s;
  MaybeRecovered();
  return Status::Ok();
}

void WorkerGroup::MaybeRecovered() {
  if (state_ != State::kRecovering || !rejoined_) return;
  for (const auto& w : workers_) {
    if (w.running && w.phase != Phase::kStepping) return;
  }
  state_ = State::kRunning;
  hang_suspect_.reset();
  for (auto& w : workers_) w.replacement = false;
  ++recoveries_;
  failures_.clear();
  failed_local_ranks_.clear();
  recover_deadline_.reset();
  rejoined_ = false;
}

void WorkerGroup::FallBack(const std::string& reason, Time now) {
  if (state_ != State::kRecovering) return;
  fallback_reason_ = reason;
  hang_suspect_.reset();
  recover_deadline_.reset();
  // Whoever has not answered may be stuck anywhere: it is killed; the
  // paused ones stop as after any failure.
  for (auto& w : workers_) {
    if (w.running && (w.phase == Phase::kPausing || w.phase == Phase::kJoining)) {
      spawner_.SignalGroup(w.pid, SIGKILL);
    }
    w.phase = Phase::kStepping;
    w.replacement = false;
  }
  BeginStopping(SIGTERM, now);
  MaybeFinish();
}

}  // namespace muster
