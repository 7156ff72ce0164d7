#include "launcher/worker_group.h"

#include <csignal>

namespace muster {

WorkerGroup::WorkerGroup(ProcessSpawner& spawner, uint32_t attempt,
                         std::chrono::milliseconds shutdown_timeout)
    : spawner_(spawner), attempt_(attempt), shutdown_timeout_(shutdown_timeout) {}

Status WorkerGroup::Start(std::vector<WorkerSpec> workers, SteadyTime now) {
  workers_.clear();
  for (auto& spec : workers) workers_.push_back(Worker{std::move(spec)});
  for (auto& w : workers_) {
    w.spec.request.tag = TagFor(w.spec.local_rank);
    auto pid = spawner_.Spawn(w.spec.request);
    if (!pid.ok()) {
      interrupted_ = false;
      BeginStopping(SIGTERM, now);
      MaybeFinish();
      return pid.status();
    }
    w.pid = *pid;
    w.running = true;
  }
  return Status::Ok();
}

void WorkerGroup::OnExit(uint64_t tag, ExitStatus status, SteadyTime now, WallTime wall) {
  for (auto& w : workers_) {
    if (TagFor(w.spec.local_rank) != tag || !w.running) continue;
    w.running = false;
    // A worker that ends badly while we are not yet stopping is a failure; one
    // that ends while we stop it was (probably) ended by us.
    if (state_ == State::kRunning && !status.success()) {
      failures_.push_back(WorkerFailure{w.spec.local_rank, w.spec.global_rank, w.pid, status, wall,
                                        w.spec.error_file});
      BeginStopping(SIGTERM, now);
    } else if (state_ == State::kStopping && !interrupted_ && !status.success() &&
               !(status.signaled && (status.signal == SIGTERM || status.signal == SIGKILL))) {
      // Failed on its own while the others were being stopped: report it too.
      failures_.push_back(WorkerFailure{w.spec.local_rank, w.spec.global_rank, w.pid, status, wall,
                                        w.spec.error_file});
    }
    break;
  }
  MaybeFinish();
}

void WorkerGroup::Stop(int sig, SteadyTime now) {
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

void WorkerGroup::BeginStopping(int sig, SteadyTime now) {
  state_ = State::kStopping;
  SignalRunning(sig);
  kill_deadline_ = now + shutdown_timeout_;
}

void WorkerGroup::SignalRunning(int sig) {
  for (const auto& w : workers_) {
    if (w.running) spawner_.SignalGroup(w.pid, sig);
  }
}

void WorkerGroup::OnTick(SteadyTime now) {
  if (state_ != State::kStopping || !kill_deadline_ || now < *kill_deadline_) return;
  SignalRunning(SIGKILL);
  killed_ = true;
  kill_deadline_.reset();
  MaybeFinish();
}

std::optional<SteadyTime> WorkerGroup::deadline() const {
  return state_ == State::kStopping ? kill_deadline_ : std::nullopt;
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

std::vector<pid_t> WorkerGroup::pids() const {
  std::vector<pid_t> pids;
  for (const auto& w : workers_) pids.push_back(w.pid);
  return pids;
}

}  // namespace muster
