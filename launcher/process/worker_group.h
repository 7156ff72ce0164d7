// WorkerGroup: supervises one attempt of this node's workers. It starts them,
// notices the first failure, stops the rest (the received signal or SIGTERM
// to each process group, SIGKILL after the shutdown timeout) and reports how
// the attempt ended. Restarting is the agent's decision, not the group's.
//
// Hang detection: a worker that has reported progress (OnProgress) and then
// reports none for `hang_timeout` (or, under EnableAutoHang, for the time
// its StepTimeLearner gives: hang_judge.h) is suspected. The group then
// asks for evidence (hang_evidence_wanted()) and waits; the agent gathers
// it (stacks, activity) and calls OnHangEvidence. Under the auto rule a
// verdict of alive, or a report from the suspect meanwhile, clears the
// suspicion (the silence counts from then);
// otherwise the culprit the verdict names (else the silent worker) is hung:
// it gets SIGKILL, counts as the failure, and the others are stopped as
// after any failure. A worker that never reports progress is never called
// hung (it may not use the runtime).
//
// In-place recovery (EnableInPlace; control/PROTOCOL.md): when a worker
// fails while every other worker runs and has said it recovers in place
// (OnHello), the others are paused instead of stopped: each gets `pause G`
// and the group is kRecovering. Once every survivor answered `ready G`,
// ready_to_join() is true and the agent, having renewed the store, calls
// Rejoin: survivors get their `join`, the failed ranks are spawned again,
// and once every survivor answered `joined` the group runs again
// (recoveries() counts it). A worker that does not answer within the
// recovery timeout, answers `failed`, or whose pipe fails is killed, and the
// group stops the rest as after any failure (kStopping, then kFailed): the
// agent's restart path. The failures a recovery handled are cleared when it
// completes, so a later failure is the root cause of the next one.
//
// A second fault during a recovery: the generation the survivors are
// joining may end before they all joined it (elastic: a node died while
// they joined). PauseAll then pauses every worker again, out of the
// generation they were joining, the processes started for it included, and
// the recovery goes on as from its first pause: a second Rejoin moves them
// all into the next generation, and only workers lost meanwhile start again.
//
// No clock or event loop inside: the caller feeds exits and time (OnExit,
// OnTick) and arms a timer for deadline(). Unit tests drive it with a fake
// spawner and fake time.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "control/control_message.h"
#include "launcher/process/exit_status.h"
#include "launcher/process/hang_judge.h"
#include "launcher/process/process_spawner.h"

namespace muster {

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
  // What the evidence gathered on the hang said (JudgeHang's summary), and
  // where the ranks' stacks were written; empty when none was gathered.
  std::string hang_summary = {};
  std::vector<StackFrame> hang_frames = {};  // the culprit's innermost frames
  std::string stacks_file = {};
};

// One running worker, as hang evidence is gathered about it.
struct HangSubject {
  int local_rank = 0;
  int global_rank = 0;
  pid_t pid = 0;
  bool dumps_stacks = false;  // it said so on its progress pipe
  std::string stack_file;     // where they are read: /proc/PID/fd/N of its memfd
};

class WorkerGroup {
 public:
  // States and transitions:
  //   kRunning   --every worker exited 0-------------------> kSucceeded
  //   kRunning   --a worker exited non-zero or was killed---> kStopping (failure)
  //   kRunning   --Stop(sig)--------------------------------> kStopping (interrupted)
  //   kStopping  --shutdown timeout-------------------------> SIGKILL to the rest, stays kStopping
  //   kStopping  --last worker gone-------------------------> kFailed | kInterrupted
  //   kRunning   --a worker failed, the rest recover in place--> kRecovering (pause sent)
  //   kRecovering --every survivor joined---------------------> kRunning
  //   kRecovering --PauseAll while joining--------------------> kRecovering (pause sent again)
  //   kRecovering --timeout, `failed`, a pipe error-----------> kStopping (failure)
  //   kRecovering --Stop(sig)----------------------------------> kStopping (interrupted)
  // A Stop() during kStopping escalates to SIGKILL at once.
  enum class State { kRunning, kRecovering, kStopping, kSucceeded, kFailed, kInterrupted };

  // How the group recovers in place: `generation` is what `pause` names
  // (the agent's current generation); `timeout` bounds each of the pause and
  // the join (a hang probe's pause: kHangProbe at most).
  static constexpr std::chrono::milliseconds kHangProbe{1000};
  struct InPlaceOptions {
    uint64_t generation = 0;
    std::chrono::milliseconds timeout{0};
    // The generation spans other nodes: a silence that every local worker
    // answers a hang probe's pause for may be another node's hang (its
    // workers block in collectives with it). Then no local worker is killed:
    // they stay paused for the next generation, within `timeout`.
    bool hangs_elsewhere = false;
  };
  // A survivor's place in the generation it joins.
  struct Rejoining {
    int local_rank = 0;
    control::Join join;
  };

  // `attempt` distinguishes this group's processes from earlier attempts'.
  // `hang_timeout` 0 turns hang detection off.
  WorkerGroup(ProcessSpawner& spawner, uint32_t attempt, std::chrono::milliseconds shutdown_timeout,
              std::chrono::milliseconds hang_timeout = std::chrono::milliseconds(0));

  // Spawns every worker. If one cannot be started, the ones already started
  // are stopped and the error is returned (the group is then kStopping).
  Status Start(std::vector<WorkerSpec> workers, Time now);

  // A process exited. Events for other attempts' tags are ignored.
  void OnExit(uint64_t tag, ExitStatus status, Time now, WallTime wall);
  // muster received `sig`: forward it to every worker's group and stop.
  void Stop(int sig, Time now);
  // The worker reported progress (`step`, or -1 when it said none). True
  // when this was its first report, which may make deadline() earlier.
  bool OnProgress(uint64_t tag, int64_t step, Time now);
  // The worker said it dumps its stacks on MUSTER_STACK_SIGNAL, into its
  // descriptor `fd` (a memfd, read as /proc/PID/fd/FD).
  void OnDumpsStacks(uint64_t tag, int fd);
  // Turns on the auto hang rule: each worker's timeout is learned from its
  // steps (replaces the fixed `hang_timeout`).
  void EnableAutoHang(const AutoHangRule& rule) { auto_hang_ = rule; }
  // A worker was found silent: the tag of the one suspected while the group
  // waits for OnHangEvidence; nullopt otherwise.
  std::optional<uint64_t> hang_evidence_wanted() const { return evidence_for_; }
  // The running workers, as evidence is gathered about them.
  std::vector<HangSubject> HangSubjects() const;
  // The evidence's verdict (`stacks_file`: where the agent wrote the
  // stacks, may be empty). Ignored unless evidence was wanted and the
  // group still runs.
  void OnHangEvidence(const HangVerdict& verdict, const std::string& stacks_file, Time now,
                      WallTime wall);
  // This node's progress in the attempt, for its heartbeats: the oldest of
  // the running workers' newest reported steps (the slowest worker speaks
  // for the node), over the workers that reported a step; nullopt when none
  // did (a script that reports nothing). A process started again (a
  // restart, or a replacement in place) counts from its own reports.
  std::optional<uint64_t> NodeStep() const;
  // The same, but nullopt until every running worker reported a step: the
  // node trains only once all its ranks step (goodput.h).
  std::optional<uint64_t> EveryWorkerStep() const;
  // The worker closed its progress pipe (the muster Python package does
  // once its training is done): it is no longer watched for hangs, so a
  // slow interpreter exit is not one.
  void OnProgressClosed(uint64_t tag);
  // Escalates to SIGKILL once the shutdown deadline has passed; while
  // running, kills a worker silent for the hang timeout; while recovering,
  // falls back to the restart path once the recovery timeout has passed.
  void OnTick(Time now, WallTime wall = WallTime{});

  // Turns in-place recovery on (it is off until called): a failure while
  // `allowed` is true is recovered in place when every worker can. The
  // agent calls it again with the new generation after each recovery.
  void EnableInPlace(const InPlaceOptions& options, bool allowed);
  // Whether PauseAll would pause: in-place recovery is on, the group runs or
  // is joining(), and every worker runs and said it recovers in place (a
  // process started for the join may not have said so yet).
  bool CanPauseAll() const;
  // Pauses every worker (a generation ends elsewhere): kRecovering with no
  // failed rank. While joining(), the `pause` names the generation being
  // joined, which its workers leave unjoined; every process, those started
  // for it included, is then a survivor to rejoin, and the failures the
  // recovery began with stay its root cause. False, and nothing done,
  // unless CanPauseAll().
  bool PauseAll(Time now);
  // A worker's control message (hello, ready, joined, failed).
  void OnControl(uint64_t tag, const control::WorkerMessage& message, Time now);
  // kRecovering and every survivor paused: the agent may renew the store
  // and call Rejoin. After a hang probe that every worker answered with
  // hangs_elsewhere, the group waits paused for the next generation and
  // falls back once `timeout` passes without one.
  bool ready_to_join() const;
  // The local ranks of this attempt's workers that never said they recover
  // in place (why a failure restarts every worker).
  std::vector<int> local_ranks_not_in_place() const;
  // kRecovering after Rejoin: the survivors were told their join and not
  // all answered it. False again once PauseAll pauses them anew.
  bool joining() const { return state_ == State::kRecovering && rejoined_; }
  // The local ranks of the paused survivors, in order.
  std::vector<int> paused_local_ranks() const;
  // The local ranks whose processes failed during this recovery and are not
  // started again yet; meaningful when ready_to_join().
  std::vector<int> failed_local_ranks() const;
  // Starts the failed ranks' processes now, while the survivors pause, so
  // their start-up overlaps the pause (their tags set by the caller; the
  // store they reach must hold their connection until the rejoin). A spawn
  // error falls back and is returned. REQUIRES: kRecovering.
  Status StartReplacements(std::vector<WorkerSpec> replacements, Time now);
  // Sends each survivor its `join` and spawns `replacements` (their tags
  // set by the caller). A spawn or pipe error falls back as a timeout does
  // and is returned. REQUIRES: ready_to_join(); `survivors` names every
  // survivor once.
  Status Rejoin(const std::vector<Rejoining>& survivors, std::vector<WorkerSpec> replacements,
                Time now);
  // The recovery cannot go on (`reason`): kills whoever has not answered and
  // stops the rest, as after any failure. Nothing while not recovering.
  void AbandonRecovery(const std::string& reason, Time now) { FallBack(reason, now); }
  // The pid of local rank `local_rank`'s running process; 0 when none runs.
  pid_t PidOf(int local_rank) const;
  // In-place recoveries completed so far.
  int recoveries() const { return recoveries_; }
  // Why the last recovery fell back to the restart path; empty if none did.
  const std::string& fallback_reason() const { return fallback_reason_; }

  // When OnTick() next has something to do, if ever.
  std::optional<Time> deadline() const;
  State state() const { return state_; }
  bool finished() const;
  int stop_signal() const { return stop_signal_; }
  // Failures in the order they happened; the first is the root cause. Workers
  // that muster itself stopped are not failures.
  const std::vector<WorkerFailure>& failures() const { return failures_; }
  // The tag of local rank `local_rank`'s current process (a replacement has
  // its own); MakeTag(attempt, local_rank) for one the group never had.
  uint64_t TagFor(int local_rank) const;
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
  // Where a worker is in an in-place recovery.
  enum class Phase { kStepping, kPausing, kPaused, kJoining };
  struct Worker {
    WorkerSpec spec;
    uint64_t tag = 0;
    pid_t pid = 0;
    bool running = false;
    bool in_place = false;  // said hello with the in-place capability
    Phase phase = Phase::kStepping;
    bool killed_as_hung = false;  // SIGKILLed by hang detection, exit not yet seen
    // Started early for the recovery under way (StartReplacements): it
    // joins by starting, so the pause does not wait for it.
    bool replacement = false;
    std::optional<Time> last_progress;  // set once it reported progress
    int64_t last_step = -1;
    StepTimeLearner steps;      // its step times, for the auto hang rule
    bool dumps_stacks = false;  // said so on its progress pipe
    std::string stack_file;     // /proc/PID/fd/N it dumps them into
  };
  bool WatchesHangs() const { return auto_hang_.has_value() || hang_timeout_.count() > 0; }
  // The silence after which `worker` is suspected.
  std::chrono::milliseconds HangTimeoutOf(const Worker& worker) const;
  static WorkerFailure FailureOf(const Worker& worker, ExitStatus status, WallTime wall);
  void KillHung(Worker& worker, Time now, WallTime wall);
  void BeginStopping(int sig, Time now);
  void SignalRunning(int sig);
  void MaybeFinish();
  Worker* Find(uint64_t tag);
  Status SpawnInto(Worker& worker);
  // A worker failed while running: pause the others when all can recover in
  // place (true), else the caller stops them.
  bool BeginRecovery(Time now);
  // Enters kRecovering and sends `pause` to every running worker.
  void PauseRunning(Time now);
  // Sends `line` to a worker's control pipe; false (and falls back) on error.
  bool Send(Worker& worker, const std::string& line, Time now);
  // The recovery cannot go on: kill whoever is unresponsive, stop the rest.
  void FallBack(const std::string& reason, Time now);
  void MaybeRecovered();
  void OnExitWhileRecovering(Worker& worker, ExitStatus status, Time now, WallTime wall);
  // A worker is silent for the hang timeout. In place, every worker is
  // paused first: one blocked in a collective with a hung peer answers (its
  // collective is interrupted), a hung one cannot, and only those are
  // killed as hung. False when the group cannot pause them all.
  bool BeginHangProbe(Worker& suspect, Time now, WallTime wall);
  // The pause or join bound passed: kill the workers that did not answer a
  // pause and go on without them when some did, else fall back.
  void OnRecoveryDeadline(Time now, WallTime wall);
  // Every worker answered a hang probe: none is stuck, so the silent one is
  // hung by the timeout's rule alone.
  void KillHangSuspect();

  ProcessSpawner& spawner_;
  uint32_t attempt_;
  std::chrono::milliseconds shutdown_timeout_;
  std::chrono::milliseconds hang_timeout_;
  std::optional<AutoHangRule> auto_hang_;
  std::optional<uint64_t> evidence_for_;  // a suspect awaiting OnHangEvidence
  Time evidence_at_{};                    // when it was suspected
  // The last verdict's words, for the hung failure KillHung records next.
  std::string hang_summary_;
  std::vector<StackFrame> hang_frames_;
  std::string hang_stacks_file_;
  std::vector<Worker> workers_;
  State state_ = State::kRunning;
  bool interrupted_ = false;
  bool killed_ = false;
  int stop_signal_ = 0;
  std::optional<Time> kill_deadline_;
  std::vector<WorkerFailure> failures_;

  std::optional<InPlaceOptions> in_place_;  // unset: recovery in place is off
  bool in_place_allowed_ = false;
  std::optional<Time> recover_deadline_;
  std::vector<int> failed_local_ranks_;  // of the recovery under way
  bool rejoined_ = false;                // Rejoin ran in the recovery under way
  // A hang probe is under way: who was silent, and when it began.
  std::optional<int> hang_suspect_;
  bool waiting_for_remote_hang_ = false;  // a probe every worker answered (hangs_elsewhere)
  WallTime hang_wall_{};
  uint64_t joining_generation_ = 0;  // what the survivors' `joined` must name
  int recoveries_ = 0;
  std::string fallback_reason_;
};

}  // namespace muster
