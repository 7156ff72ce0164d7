#include "launcher/process/worker_group.h"

#include <csignal>
#include <utility>

namespace muster {

WorkerGroup::WorkerGroup(ProcessSpawner& spawner, uint32_t attempt,
                         std::chrono::milliseconds shutdown_timeout,
                         std::chrono::milliseconds hang_timeout)
    : spawner_(spawner),
      attempt_(attempt),
      shutdown_timeout_(shutdown_timeout),
      hang_timeout_(hang_timeout) {}

WorkerFailure WorkerGroup::FailureOf(const Worker& worker, ExitStatus status, WallTime wall) {
  WorkerFailure failure;
  failure.local_rank = worker.spec.local_rank;
  failure.global_rank = worker.spec.global_rank;
  failure.pid = worker.pid;
  failure.status = status;
  failure.time = wall;
  failure.error_file = worker.spec.error_file;
  return failure;
}

Status WorkerGroup::Start(std::vector<WorkerSpec> workers, Time now) {
  workers_.clear();
  for (auto& spec : workers) {
    Worker worker;
    worker.spec = std::move(spec);
    workers_.push_back(std::move(worker));
  }
  for (auto& w : workers_) {
    w.spec.request.tag = MakeTag(attempt_, w.spec.local_rank);
    if (Status s = SpawnInto(w); !s.ok()) {
      interrupted_ = false;
      BeginStopping(SIGTERM, now);
      MaybeFinish();
      return s;
    }
  }
  return Status::Ok();
}

Status WorkerGroup::SpawnInto(Worker& worker) {
  auto pid = spawner_.Spawn(worker.spec.request);
  if (!pid.ok()) return pid.status();
  worker.tag = worker.spec.request.tag;
  worker.pid = *pid;
  worker.running = true;
  worker.in_place = false;
  worker.phase = Phase::kStepping;
  worker.killed_as_hung = false;
  worker.replacement = false;
  worker.last_progress.reset();
  worker.last_step = -1;
  return Status::Ok();
}

WorkerGroup::Worker* WorkerGroup::Find(uint64_t tag) {
  for (auto& w : workers_) {
    if (w.tag == tag && w.running) return &w;
  }
  return nullptr;
}

uint64_t WorkerGroup::TagFor(int local_rank) const {
  for (const auto& w : workers_) {
    if (w.spec.local_rank == local_rank && w.tag != 0) return w.tag;
  }
  return MakeTag(attempt_, local_rank);
}

void WorkerGroup::OnExit(uint64_t tag, ExitStatus status, Time now, WallTime wall) {
  for (auto& w : workers_) {
    if (w.tag != tag || !w.running) continue;
    w.running = false;
    // A worker that ends badly while we are not yet stopping is a failure; one
    // that ends while we stop it was (probably) ended by us.
    if (state_ == State::kRunning && !status.success()) {
      failures_.push_back(FailureOf(w, status, wall));
      if (!BeginRecovery(now)) BeginStopping(SIGTERM, now);
    } else if (state_ == State::kRecovering) {
      OnExitWhileRecovering(w, status, now, wall);
    } else if (state_ == State::kStopping && !interrupted_ && !status.success() &&
               !(status.signaled && (status.signal == SIGTERM || status.signal == SIGKILL))) {
      // Failed on its own while the others were being stopped: report it too.
      failures_.push_back(FailureOf(w, status, wall));
    }
    break;
  }
  MaybeFinish();
}

void WorkerGroup::Stop(int sig, Time now) {
  if (finished()) return;
  if (state_ == State::kStopping) {
    // A second signal: the user does not want to wait for a graceful exit.
    interrupted_ = true;
    stop_signal_ = sig;
    SignalRunning(SIGKILL);
    killed_ = true;
    kill_deadline_.reset();
    return;
  }
  interrupted_ = true;
  stop_signal_ = sig;
  BeginStopping(sig, now);
  MaybeFinish();  // nothing may be running at all
}

void WorkerGroup::BeginStopping(int sig, Time now) {
  state_ = State::kStopping;
  SignalRunning(sig);
  kill_deadline_ = now + shutdown_timeout_;
}

void WorkerGroup::SignalRunning(int sig) {
  for (const auto& w : workers_) {
    if (!w.running) continue;
    spawner_.SignalGroup(w.pid, sig);
    // A stopped worker (SIGSTOP, a debugger's stop) would act on the signal
    // only after the shutdown timeout's SIGKILL: let it run to act now.
    if (sig != SIGKILL && sig != SIGCONT) spawner_.SignalGroup(w.pid, SIGCONT);
  }
}

bool WorkerGroup::OnProgress(uint64_t tag, int64_t step, Time now) {
  for (auto& w : workers_) {
    if (w.tag != tag || !w.running) continue;
    const bool first = !w.last_progress;
    w.last_progress = now;
    if (step >= 0) {
      w.last_step = step;
      w.steps.OnStep(now);
    }
    return first;
  }
  return false;
}

void WorkerGroup::OnDumpsStacks(uint64_t tag, int fd) {
  Worker* w = Find(tag);
  if (!w || !w->running || fd < 0) return;
  w->dumps_stacks = true;
  w->stack_file = "/proc/" + std::to_string(w->pid) + "/fd/" + std::to_string(fd);
}

std::chrono::milliseconds WorkerGroup::HangTimeoutOf(const Worker& worker) const {
  return auto_hang_ ? worker.steps.Timeout(*auto_hang_) : hang_timeout_;
}

std::vector<HangSubject> WorkerGroup::HangSubjects() const {
  std::vector<HangSubject> subjects;
  for (const auto& w : workers_) {
    if (!w.running) continue;
    subjects.push_back(
        {w.spec.local_rank, w.spec.global_rank, w.pid, w.dumps_stacks, w.stack_file});
  }
  return subjects;
}

void WorkerGroup::OnHangEvidence(const HangVerdict& verdict, const std::string& stacks_file,
                                 Time now, WallTime wall) {
  if (!evidence_for_) return;
  const uint64_t suspect_tag = *evidence_for_;
  evidence_for_.reset();
  if (state_ != State::kRunning) return;  // something else ended the run meanwhile
  const Worker* suspect = Find(suspect_tag);
  const bool stepped_since =
      suspect && suspect->last_progress && *suspect->last_progress > evidence_at_;
  if (auto_hang_ && (verdict.alive || stepped_since)) {
    // Working, not hung: every silence counts from now.
    for (auto& w : workers_) {
      if (w.running && w.last_progress) w.last_progress = now;
    }
    return;
  }
  Worker* target = nullptr;
  for (const int rank : verdict.culprits) {
    for (auto& w : workers_) {
      if (w.running && w.spec.global_rank == rank) target = &w;
    }
    if (target) break;
  }
  if (!target) target = Find(suspect_tag);
  if (!target || !target->running) return;
  hang_summary_ = verdict.summary;
  // The frames are the culprit's: kept only when the culprit is the one killed.
  hang_frames_ = verdict.culprits.empty() || target->spec.global_rank != verdict.culprits.front()
                     ? std::vector<StackFrame>{}
                     : verdict.culprit_frames;
  hang_stacks_file_ = stacks_file;
  if (BeginHangProbe(*target, now, wall)) return;
  KillHung(*target, now, wall);
  if (!BeginRecovery(now)) BeginStopping(SIGTERM, now);
}

std::optional<uint64_t> WorkerGroup::NodeStep() const {
  std::optional<uint64_t> oldest;
  for (const auto& w : workers_) {
    if (!w.running || w.last_step < 0) continue;
    const auto step = static_cast<uint64_t>(w.last_step);
    if (!oldest || step < *oldest) oldest = step;
  }
  return oldest;
}

std::optional<uint64_t> WorkerGroup::EveryWorkerStep() const {
  for (const auto& w : workers_) {
    if (w.running && w.last_step < 0) return std::nullopt;
  }
  return NodeStep();
}

void WorkerGroup::OnProgressClosed(uint64_t tag) {
  if (Worker* w = Find(tag)) w->last_progress.reset();
}

void WorkerGroup::KillHung(Worker& worker, Time now, WallTime wall) {
  WorkerFailure failure = FailureOf(worker, ExitStatus::Killed(SIGKILL), wall);
  failure.hung = true;
  // One that never reported progress is hung only by failing to answer a
  // pause (in place): its silence is not known.
  if (worker.last_progress) {
    failure.silent_for =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - *worker.last_progress);
  }
  failure.last_step = worker.last_step;
  failure.hang_summary = std::exchange(hang_summary_, {});
  failure.hang_frames = std::exchange(hang_frames_, {});
  failure.stacks_file = std::exchange(hang_stacks_file_, {});
  failures_.push_back(failure);
  worker.killed_as_hung = true;
  // SIGKILL: a hung process may not act on SIGTERM, and its exit (by
  // SIGKILL, while stopping or recovering) is then not counted a second time.
  spawner_.SignalGroup(worker.pid, SIGKILL);
}

void WorkerGroup::OnTick(Time now, WallTime wall) {
  if (state_ == State::kRecovering) {
    if (recover_deadline_ && now >= *recover_deadline_) OnRecoveryDeadline(now, wall);
    return;
  }
  if (state_ == State::kRunning && WatchesHangs()) {
    if (evidence_for_) return;  // the agent is gathering evidence
    for (auto& w : workers_) {
      if (!w.running || !w.last_progress || now - *w.last_progress < HangTimeoutOf(w)) continue;
      evidence_for_ = w.tag;  // judged in OnHangEvidence
      evidence_at_ = now;
      return;
    }
    return;
  }
  if (state_ != State::kStopping || !kill_deadline_ || now < *kill_deadline_) return;
  SignalRunning(SIGKILL);
  killed_ = true;
  kill_deadline_.reset();
  MaybeFinish();
}

std::optional<Time> WorkerGroup::deadline() const {
  if (state_ == State::kStopping) return kill_deadline_;
  if (state_ == State::kRecovering) return recover_deadline_;
  std::optional<Time> earliest;
  if (state_ != State::kRunning || !WatchesHangs() || evidence_for_) return earliest;
  for (const auto& w : workers_) {
    if (!w.running || !w.last_progress) continue;
    const Time hang_at = *w.last_progress + HangTimeoutOf(w);
    if (!earliest || hang_at < *earliest) earliest = hang_at;
  }
  return earliest;
}

bool WorkerGroup::finished() const {
  return state_ == State::kSucceeded || state_ == State::kFailed || state_ == State::kInterrupted;
}

void WorkerGroup::MaybeFinish() {
  for (const auto& w : workers_) {
    if (w.running) return;
  }
  if (state_ == State::kRunning) {
    state_ = State::kSucceeded;
  } else if (state_ == State::kRecovering && failures_.empty()) {
    // A pause no failure began (a hang probe, a generation ending
    // elsewhere) met the workers' own ends: each one exited successfully,
    // so the job is done.
    recover_deadline_.reset();
    state_ = State::kSucceeded;
  } else if (state_ == State::kRecovering) {
    // Every process is gone: nothing is left to recover in place.
    fallback_reason_ = "every worker exited during the recovery";
    recover_deadline_.reset();
    state_ = State::kFailed;
  } else if (state_ == State::kStopping) {
    state_ = interrupted_ ? State::kInterrupted : State::kFailed;
  }
  kill_deadline_.reset();
}

void WorkerGroup::KillAllGroups() {
  for (const auto& w : workers_) {
    if (w.pid > 0) spawner_.SignalGroup(w.pid, SIGKILL);
  }
}

bool WorkerGroup::SignalWorker(int local_rank, int sig) {
  for (const auto& w : workers_) {
    if (w.spec.local_rank != local_rank || !w.running) continue;
    // Only a running worker: a reaped pid may already belong to another process.
    spawner_.SignalProcess(w.pid, sig);
    return true;
  }
  return false;
}

}  // namespace muster
