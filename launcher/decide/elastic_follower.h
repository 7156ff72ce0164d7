// ElasticFollower: how this node follows the generations the rendezvous
// daemon decides, as a pure decision object. The agent feeds it what the
// rendezvous client and the worker group report (events) and carries out
// what it returns (actions), in order; nothing here touches a process, a
// socket, the store or a clock. Tests: tests/unit/launcher_elastic_follower_test.cc.
// Its sibling for static runs: StaticFollower (static_follower.h), which also
// says what each counter (the attempt, the failure restarts) means. The
// actions both return: follower_actions.h.
//
// clang-format off
// States and transitions ("running" below means kRunning, kStopping,
// kPausing or kPaused: some worker of this node is alive; kRunning begins
// with RejoinWorkers too, while the workers still join, and a pause then
// cuts their join short):
//
//   Assignment of a generation older than the newest one started here
//     any state --------------------------------------------> unchanged, nothing
//   Assignment of the generation started here (the daemon repeats one when a
//   member rejoins, or after its restart rebuilt the run)
//     running, kSettling -----------------------------------> unchanged, nothing: the outcome
//                                                              is reported once the workers are
//                                                              done
//     kIdle ------------------------------------------------> kIdle, ReportSucceeded (repeated) or
//                                                              ReportFailure (repeated)
//   Assignment of a newer generation (it becomes pending)
//     kIdle ------------------------------------------------> kRunning, StartWorkers
//     kRunning, workers can pause --------------------------> kPausing, PauseWorkers
//     kRunning otherwise, kStopping ------------------------> kStopping, StopWorkers(SIGTERM)
//     kPausing ---------------------------------------------> kPausing: it rejoins once paused
//     kPaused ----------------------------------------------> kRunning, RejoinWorkers
//     kSettling --------------------------------------------> kSettling, nothing: it starts once
//                                                              settled
//   Waiting (the generation ends everywhere; a pending one is dropped)
//     kRunning, workers can pause --------------------------> kPausing, SealStore, PauseWorkers
//     kRunning otherwise, kStopping ------------------------> kStopping, SealStore,
//                                                              StopWorkers(SIGTERM)
//     otherwise --------------------------------------------> unchanged, SealStore
//   WorkersPausing (a local worker failed; the group pauses the others)
//     kRunning ---------------------------------------------> kPausing,
//                                                              ReportFailureLocally(in place)
//     kPausing; kPaused (a worker died while paused between
//     generations: no assignment is current); kIdle, kStopping,
//     kSettling --------------------------------------------> unchanged,
//                                                              ReportFailureLocally(in place)
//     (every report counts the restarts of the last assignment started or rejoined here)
//   RecoveryEnded (a recovery in place ended)
//     kRunning, recovered ----------------------------------> ArmInPlace(the current generation)
//     otherwise --------------------------------------------> nothing
//   WorkersPaused (every surviving worker paused)
//     kPausing, after a local failure ----------------------> ReportFailure, ClearCurrent, then:
//     kPausing ---------------------------------------------> ClearCurrent, then:
//       the run ended --------------------------------------> kStopping, StopWorkers(SIGTERM)
//       a generation is pending ----------------------------> kRunning, RejoinWorkers
//       otherwise ------------------------------------------> kPaused
//   Fence (this node lost the daemon; current and pending are dropped)
//     running ----------------------------------------------> kStopping, ClearCurrent, SealStore,
//                                                              StopWorkers(SIGKILL)
//     otherwise --------------------------------------------> unchanged, ClearCurrent, SealStore
//   RunEnded (the daemon ended the run) / RendezvousFailed (the client gave up)
//     running ----------------------------------------------> kStopping, StopWorkers(SIGTERM)
//     kIdle ------------------------------------------------> kFinished, Finish
//     kSettling --------------------------------------------> kSettling, nothing: it finishes
//                                                              once settled
//   Signal (muster was signalled; the job stops)
//     running ----------------------------------------------> kStopping, LeaveRendezvous,
//                                                              StopWorkers(the signal)
//     kIdle, kSettling -------------------------------------> kFinished, LeaveRendezvous,
//                                                              Finish(128+signal)
//   StartFailed (StartWorkers could not start every worker)
//     kRunning, none of them left --------------------------> kIdle, ClearCurrent,
//                                                              ReportFailure(127)
//     kRunning, some still stopping ------------------------> kRunning: judged once settled
//   WorkersGone (every worker exited; their output drains)
//     running ----------------------------------------------> kSettling
//   WorkersSettled (the output drained: the attempt's outcome is final)
//     kSettling, stopped by a signal -----------------------> kFinished, Finish(128+signal)
//     kSettling, otherwise, first what this generation did:
//       succeeded ------------------------------------------> ReportSucceeded
//       failed to start (and not stopped by this node) -----> ReportFailure(127), ClearCurrent
//       failed (and not stopped by this node) --------------> ReportFailureLocally,
//                                                              ReportFailure, SealStore,
//                                                              ClearCurrent
//       stopped by this node (new generation, fence, end) --> ClearCurrent
//     then what comes next:
//       the run ended --------------------------------------> kFinished, Finish
//       a generation is pending ----------------------------> kRunning, StartWorkers
//       otherwise ------------------------------------------> kIdle
//   kFinished: every event is ignored (the agent is exiting).
//
// What comes after a stop: a signal outranks everything (muster exits
// 128+signal); after a fence (it drops the pending generation) or the run's
// end (checked before a pending generation) no new generation starts.
//
// clang-format on
//
// Not thread-safe: the agent calls it from its one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "launcher/decide/follower_actions.h"
#include "rendezvous/protocol/messages.h"

namespace muster {

// Start the workers of `assignment`'s generation on this node, and tell the
// rendezvous client they run under it; a failure of theirs may be recovered
// as `in_place` says. The agent reports StartFailed if it cannot start
// every worker. Always the last action of its list.
struct StartWorkers {
  rdzv::Assignment assignment;
  ArmInPlace in_place;
};
// Pause every running worker in place (control/PROTOCOL.md): the agent
// answers OnWorkersPaused once all have, or the group falls back to
// stopping them (then the usual WorkersGone/WorkersSettled follow).
struct PauseWorkers {};
// Move the paused workers into `assignment`'s generation and start the
// ranks that have no process (failed ones); tell the rendezvous client they
// run under it. Always the last action of its list.
struct RejoinWorkers {
  rdzv::Assignment assignment;
};
// Tell the daemon every worker of `generation` succeeded here. `repeated`:
// said again for a daemon that forgot it, not news for the log.
struct ReportSucceeded {
  uint64_t generation = 0;
  bool repeated = false;
};
// Tell the daemon the workers of `generation` failed here, with muster's
// exit code for it and why.
struct ReportFailure {
  uint64_t generation = 0;
  int exit_code = 1;
  std::string message;
};
// Tell the rendezvous client no workers run here now.
struct ClearCurrent {};
// Seal the worker store: the generation's workers lose it, and the next one
// meets an empty store.
struct SealStore {};
// Leave the run: muster is going away.
struct LeaveRendezvous {};

using FollowerAction = std::variant<StartWorkers, StopWorkers, PauseWorkers, RejoinWorkers,
                                    ReportSucceeded, ReportFailure, ReportFailureLocally,
                                    ClearCurrent, SealStore, LeaveRendezvous, ArmInPlace, Finish>;
using FollowerActions = std::vector<FollowerAction>;

class ElasticFollower {
 public:
  enum class State {
    kIdle,      // no worker of this node runs; waiting for an assignment
    kRunning,   // the workers of current() run (a failed one may be stopping the rest)
    kStopping,  // this node stops its workers: stop_reason() says why
    kPausing,   // the workers are being paused in place (a local failure or a generation's end)
    kPaused,    // every worker paused: they wait, alive, for the next generation
    kSettling,  // every worker exited; their output drains before the outcome is judged
    kFinished,  // a Finish action was returned; the agent is exiting
  };
  // Why this node stops its workers; kNone while it does not.
  enum class StopReason { kNone, kReassigned, kFenced, kRunEnded, kSignal };

  // The daemon assigned this node its place in a generation.
  FollowerActions OnAssignment(const rdzv::Assignment& assignment);
  // The daemon ended the current generation and waits for the next one.
  FollowerActions OnWaiting();
  // This node lost the daemon for too long and must not train on.
  FollowerActions OnFence();
  // The daemon ended the run.
  FollowerActions OnRunEnded(bool succeeded);
  // The client cannot reach the daemon or was refused for good: the run
  // ends here as failed (unless an earlier RunEnded said it succeeded).
  FollowerActions OnRendezvousFailed();
  // muster received `sig`.
  FollowerActions OnSignal(int sig);
  // StartWorkers failed with `message`; `workers_stopping`: some workers had
  // started and are being stopped. REQUIRES: state() is kRunning.
  FollowerActions OnStartFailed(const std::string& message, bool workers_stopping);
  // Every worker of the attempt exited (their output may still drain).
  void OnWorkersGone();
  // In-place recovery. Whether every running worker can be paused in place
  // now (WorkerGroup::CanPauseAll: also while they join a generation, which
  // may end before they joined it): the agent sets it before each event,
  // and a generation's end then pauses them (PauseWorkers) instead of
  // stopping them.
  void SetWorkersCanPause(bool can) { workers_can_pause_ = can; }
  // A local worker failed and the group began pausing the others by
  // itself: the failure report is printed now, the daemon hears of it once
  // they paused. In any other state (a worker failed while a pause the
  // follower asked for was under way, or while the workers waited paused
  // for the next generation) the report alone.
  FollowerActions OnWorkersPausing(const LocalFailure& failure);
  // Every surviving worker paused: after PauseWorkers or OnWorkersPausing;
  // or, in kRunning, a pause the group began with no local failure (a hang
  // probe every worker answered): they wait, paused, for the next
  // generation, which rejoins them.
  FollowerActions OnWorkersPaused();
  // The recovery in place under way ended: its survivors joined the current
  // generation (`recovered`), or the group stops every worker instead.
  FollowerActions OnRecoveryEnded(bool recovered);
  // The attempt's output drained: its outcome is final.
  FollowerActions OnWorkersSettled(const WorkersOutcome& outcome);

  State state() const { return state_; }
  StopReason stop_reason() const { return stop_reason_; }
  // The assignment the workers run (or last ran) under; nullopt when none.
  const std::optional<rdzv::Assignment>& current() const { return current_; }
  // The next generation, started once the workers of this one are gone.
  const std::optional<rdzv::Assignment>& pending() const { return pending_; }
  // What muster exits with when the run failed: the exit code of this
  // node's root-cause failure, or 1 when the failure was elsewhere.
  int failure_exit_code() const { return root_cause_exit_code_.value_or(1); }

 private:
  bool WorkersAlive() const {
    return state_ == State::kRunning || state_ == State::kStopping || state_ == State::kPausing ||
           state_ == State::kPaused;
  }
  // The current generation ends here (a newer one, Waiting): pause the
  // workers when they can be, else stop them. Paused or pausing: nothing.
  void EndCurrent(FollowerActions& out);
  void Rejoin(const rdzv::Assignment& assignment, FollowerActions& out);
  // What Start and Rejoin share: `assignment` is now the generation its
  // workers run (they never start twice for one generation).
  void RunGeneration(const rdzv::Assignment& assignment);
  // Stops the workers for `reason` unless a stronger reason already stands.
  void Stop(StopReason reason, int sig, FollowerActions& out);
  void Start(const rdzv::Assignment& assignment, FollowerActions& out);
  // How the workers of `assignment` may recover in place: the daemon keeps
  // the restart count, so always allowed.
  static ArmInPlace InPlaceFor(const rdzv::Assignment& assignment);
  // The current generation is over here: the client hears no workers run.
  void DropCurrent(FollowerActions& out);
  // The run is over: the exit code, once the workers are gone.
  void EndRun(FollowerActions& out);
  // The run is over (RunEnded or RendezvousFailed): stop the workers, or
  // finish when none runs.
  FollowerActions RunIsOver();

  State state_ = State::kIdle;
  StopReason stop_reason_ = StopReason::kNone;
  std::optional<rdzv::Assignment> current_;
  std::optional<rdzv::Assignment> pending_;
  // The failure restarts of the last assignment started or rejoined here
  // (it stays after current_ is dropped: a worker may fail while paused).
  int restart_count_ = 0;
  int max_restarts_ = 0;
  // The newest generation whose workers this node started (they never start
  // twice for one generation), and whether they all succeeded.
  std::optional<uint64_t> ran_generation_;
  bool ran_generation_succeeded_ = false;
  // Why StartWorkers failed after spawning some workers, reported once they
  // are gone.
  std::optional<std::string> start_failure_;
  bool run_ended_ = false;
  bool run_succeeded_ = false;
  int signal_ = 0;  // the latest signal muster received
  std::optional<int> root_cause_exit_code_;
  bool workers_can_pause_ = false;
  // A local failure the pause began with, reported once every worker paused.
  std::optional<ReportFailure> pause_failure_;
};

}  // namespace muster
