// WorkerGroup: supervises one attempt of this node's workers. It starts them,
// notices the first failure, stops the rest (the received signal or SIGTERM
// to each process group, SIGKILL after the shutdown timeout) and reports how
// the attempt ended. Restarting is the agent's decision, not the group's.
//
// Hang detection: a worker that has reported progress (OnProgress) and then
// reports none for `hang_timeout` is hung: it gets SIGKILL, counts as the
// failure, and the others are stopped as after any failure. A worker that
// never reports progress is never called hung (it may not use the runtime).
//
// No clock or event loop inside: the caller feeds exits and time (OnExit,
// OnTick) and arms a timer for deadline(). Unit tests drive it with a fake
// spawner and fake time.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "launcher/exit_status.h"
#include "launcher/process_spawner.h"

namespace muster {

using SteadyTime = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;

struct WorkerSpec {
  int local_rank = 0;
  int global_rank = 0;
  std::string error_file;  // TORCHELASTIC_ERROR_FILE of this worker
  SpawnRequest request;    // tag is set by the group
};

struct WorkerFailure {
  int local_rank = 0;
  int global_rank = 0;
  pid_t pid = 0;
  ExitStatus status;
  WallTime time;
  std::string error_file;
  // Killed by the group after reporting no progress for `silent_for`; its
  // last reported step was `last_step` (-1: none parsed).
  bool hung = false;
  std::chrono::milliseconds silent_for{0};
  int64_t last_step = -1;
};

class WorkerGroup {
 public:
  // States and transitions:
  //   kRunning   --every worker exited 0-------------------> kSucceeded
  //   kRunning   --a worker exited non-zero or was killed---> kStopping (failure)
  //   kRunning   --Stop(sig)--------------------------------> kStopping (interrupted)
  //   kStopping  --shutdown timeout-------------------------> SIGKILL to the rest, stays kStopping
  //   kStopping  --last worker gone-------------------------> kFailed | kInterrupted
  // A Stop() during kStopping escalates to SIGKILL at once.
  enum class State { kRunning, kStopping, kSucceeded, kFailed, kInterrupted };

  // `attempt` distinguishes this group's processes from earlier attempts'.
  // `hang_timeout` 0 turns hang detection off.
  WorkerGroup(ProcessSpawner& spawner, uint32_t attempt, std::chrono::milliseconds shutdown_timeout,
              std::chrono::milliseconds hang_timeout = std::chrono::milliseconds(0));

  // Spawns every worker. If one cannot be started, the ones already started
  // are stopped and the error is returned (the group is then kStopping).
  Status Start(std::vector<WorkerSpec> workers, SteadyTime now);

  // A process exited. Events for other attempts' tags are ignored.
  void OnExit(uint64_t tag, ExitStatus status, SteadyTime now, WallTime wall);
  // muster received `sig`: forward it to every worker's group and stop.
  void Stop(int sig, SteadyTime now);
  // The worker reported progress (`step`, or -1 when it said none). True
  // when this was its first report, which may make deadline() earlier.
  bool OnProgress(uint64_t tag, int64_t step, SteadyTime now);
  // Escalates to SIGKILL once the shutdown deadline has passed; while
  // running, kills a worker silent for the hang timeout.
  void OnTick(SteadyTime now, WallTime wall = WallTime{});

  // When OnTick() next has something to do, if ever.
  std::optional<SteadyTime> deadline() const;
  State state() const { return state_; }
  bool finished() const;
  int stop_signal() const { return stop_signal_; }
  // Failures in the order they happened; the first is the root cause. Workers
  // that muster itself stopped are not failures.
  const std::vector<WorkerFailure>& failures() const { return failures_; }
  uint64_t TagFor(int local_rank) const { return MakeTag(attempt_, local_rank); }
  // The tag of local rank `local_rank`'s process in attempt `attempt`.
  static uint64_t MakeTag(uint32_t attempt, int local_rank) {
    return (static_cast<uint64_t>(attempt) << 32) | static_cast<uint32_t>(local_rank);
  }
  // The local rank a tag names (MakeTag's second argument).
  static int LocalRankOf(uint64_t tag) { return static_cast<int>(tag & 0xffffffffu); }
  // SIGKILL to every process group this attempt created, alive or not: reaps
  // grandchildren that outlived their worker.
  void KillAllGroups();
  // Sends `sig` to local rank `local_rank`'s process alone (not its
  // children) through the spawner, as fault injection does. False, and
  // nothing sent, when that worker is not running (never started, or its
  // exit was already reported).
  bool SignalWorker(int local_rank, int sig);

 private:
  struct Worker {
    WorkerSpec spec;
    pid_t pid = 0;
    bool running = false;
    std::optional<SteadyTime> last_progress;  // set once it reported progress
    int64_t last_step = -1;
  };
  static WorkerFailure FailureOf(const Worker& worker, ExitStatus status, WallTime wall);
  void KillHung(Worker& worker, SteadyTime now, WallTime wall);
  void BeginStopping(int sig, SteadyTime now);
  void SignalRunning(int sig);
  void MaybeFinish();

  ProcessSpawner& spawner_;
  uint32_t attempt_;
  std::chrono::milliseconds shutdown_timeout_;
  std::chrono::milliseconds hang_timeout_;
  std::vector<Worker> workers_;
  State state_ = State::kRunning;
  bool interrupted_ = false;
  bool killed_ = false;
  int stop_signal_ = 0;
  std::optional<SteadyTime> kill_deadline_;
  std::vector<WorkerFailure> failures_;
};

}  // namespace muster
