// StaticFollower: how this node runs and restarts its own workers in a static
// run (torchrun's static rendezvous: every node restarts its workers on its
// own, within --max-restarts), as a pure decision object. The sibling of
// ElasticFollower (elastic_follower.h), of the same shape: the agent feeds it
// what the worker group reports (events) and carries out what it returns
// (actions), in order; nothing here touches a process, the store or a clock.
// Tests: tests/unit/launcher_static_follower_test.cc.
//
// Counters: each has one meaning, in both modes.
//   attempt: the number of one attempt of this node's workers, 0 for the
//     first. Whatever an attempt's processes carry comes from it: their
//     TORCHELASTIC_RESTART_COUNT (equal to it), their spawn tags, their
//     attempt_<N> log directory, the store namespace muster/<N>/ and the
//     store's renewal for it (StoreServer::Open(attempt + 1)). Static:
//     attempt() is how many times this node restarted its workers, a
//     recovery in place counting as one (its replacements, then its
//     survivors, belong to attempt() + 1). Elastic: AttemptOf(generation),
//     the generation minus one, so a membership change makes a new attempt
//     too (every generation meets fresh store keys).
//   failure restarts: how many of --max-restarts the job has used: the
//     failure report's "restart N of M", and whether a failure restarts.
//     Static: attempt() (every restart here is a failure's). Elastic: the
//     daemon's count, rdzv::Assignment::restart_count.
//   G, the number in the control protocol's `pause G` and `join G`
//     (control/PROTOCOL.md; ArmInPlace::generation), which differs by mode.
//     Static: the survivors of attempt A get `pause A`, then `join A+1`:
//     each names an attempt. Elastic: the workers of generation N (attempt
//     N-1) get `pause N`, then `join M` for the generation M they join:
//     each names a generation, i.e. the attempt plus one.
//
// clang-format off
// States and transitions ("alive" below means kRunning, kRecovering or
// kStopping: some worker of this node may still run):
//
//   Start (the node is set up; the warm process, if any, settled)
//     kIdle ------------------------------------------------> kRunning, StartAttemptWorkers(0)
//   (every StartAttemptWorkers(N) arms recovery in place as ArmInPlace(N,
//   allowed while N < max_restarts): a recovery counts as a restart)
//   StartFailed (StartAttemptWorkers could not start every worker)
//     kRunning, none of them left --------------------------> kFinished, Finish(127)
//     kRunning, some still stopping ------------------------> kStopping: Finish(127) once settled
//   Signal (muster was signalled; the job stops)
//     alive ------------------------------------------------> kStopping, StopWorkers(the signal)
//     kIdle, kSettling -------------------------------------> kFinished, Finish(128+signal)
//   WorkersPausing (a local worker failed; the group pauses the others in place)
//     kRunning, a restart left -----------------------------> kRecovering,
//                                                              ReportFailureLocally(in place),
//                                                              StartReplacements(attempt+1)
//     kRunning, none left ----------------------------------> kRunning, AbandonRecovery: the
//                                                              group stops every worker, and
//                                                              the failure ends the job
//   WorkersPaused (every survivor paused)
//     kRecovering ------------------------------------------> kRecovering, RejoinAttempt(attempt+1)
//   Recovered (every survivor joined attempt+1)
//     kRecovering ------------------------------------------> kRunning; attempt() is attempt+1,
//                                                              ArmInPlace(attempt+1, allowed
//                                                              while a restart is left)
//   RecoveryFellBack (the group stops every worker instead: a timeout, a
//   worker that failed to pause or join, or a stop from outside)
//     kRecovering ------------------------------------------> kRunning: the group is stopping
//                                                              them, and the restart that follows
//                                                              takes attempt+1
//   WorkersGone (every worker exited; their output drains)
//     alive ------------------------------------------------> kSettling
//   WorkersSettled (the output drained: the attempt's outcome is final)
//     kSettling, a start had failed ------------------------> kFinished, Finish(127)
//     kSettling, succeeded ---------------------------------> kFinished, AttemptSucceeded, Finish(0)
//     kSettling, interrupted -------------------------------> kFinished, Finish(128+signal)
//     kSettling, failed, restarts left ---------------------> kRunning, ReportFailureLocally,
//                                                              StartAttemptWorkers(attempt+1)
//     kSettling, failed, none left -------------------------> kFinished, ReportFailureLocally,
//                                                              Finish(the root cause's code)
//   kFinished: every event is ignored (the agent is exiting).
// clang-format on
//
// Not thread-safe: the agent calls it from its one thread.
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

#include "launcher/decide/follower_actions.h"

namespace muster {

// The attempt whose workers run `generation` in an elastic run.
inline int AttemptOf(uint64_t generation) { return static_cast<int>(generation) - 1; }

// Start every local worker as attempt `attempt` (a restart when it is above
// 0: the store is renewed for it first); a failure of theirs may be
// recovered as `in_place` says. The agent reports StartFailed if it cannot
// start every worker. Always the last action of its list.
struct StartAttemptWorkers {
  int attempt = 0;
  ArmInPlace in_place;
};
// Start the failed ranks' processes as attempt `attempt` while the survivors
// pause: their start-up overlaps the pause. The store stays sealed until the
// survivors rejoin. A start that fails falls the recovery back.
struct StartReplacements {
  int attempt = 0;
};
// Renew the store for attempt `attempt` and move the paused survivors into
// it (the failed ranks not started yet start now).
struct RejoinAttempt {
  int attempt = 0;
};
// Every worker of `attempt` succeeded: say so in the log.
struct AttemptSucceeded {
  int attempt = 0;
};

using StaticAction =
    std::variant<StartAttemptWorkers, StopWorkers, StartReplacements, RejoinAttempt,
                 ReportFailureLocally, AttemptSucceeded, ArmInPlace, AbandonRecovery, Finish>;
using StaticActions = std::vector<StaticAction>;

class StaticFollower {
 public:
  enum class State {
    kIdle,        // nothing started yet
    kRunning,     // the workers of attempt() run (a failed one may be stopping the rest)
    kRecovering,  // a local failure paused the survivors; attempt()+1 recovers them in place
    kStopping,    // muster stops the workers (a signal, or a start that failed)
    kSettling,    // every worker exited; their output drains before the outcome is judged
    kFinished,    // a Finish action was returned; the agent is exiting
  };

  explicit StaticFollower(int max_restarts) : max_restarts_(max_restarts) {}

  // The node is ready: the first attempt starts.
  StaticActions OnStart();
  // StartAttemptWorkers failed; `workers_stopping`: some workers had started
  // and are being stopped.
  StaticActions OnStartFailed(bool workers_stopping);
  // muster received `sig`.
  StaticActions OnSignal(int sig);
  // A local worker failed and the group began pausing the others in place;
  // its failure is known (what it is does not change what happens here).
  StaticActions OnWorkersPausing(const LocalFailure& failure);
  // Every survivor of the recovery under way paused.
  StaticActions OnWorkersPaused();
  // The recovery under way ended: every survivor joined the next attempt
  // (`recovered`), or the group fell back to stopping every worker.
  StaticActions OnRecoveryEnded(bool recovered);
  // Every worker of the attempt exited (their output may still drain).
  void OnWorkersGone();
  // The attempt's output drained: its outcome is final.
  StaticActions OnWorkersSettled(const WorkersOutcome& outcome);

  State state() const { return state_; }
  // The attempt whose workers run (or last ran) here; see "Counters" above.
  int attempt() const { return attempt_; }

 private:
  // Whether a failure of attempt() may be recovered in place: it counts as a
  // restart, so one must be left.
  bool RestartLeft() const { return attempt_ < max_restarts_; }
  // How this attempt is armed for recovery in place: allowed while a restart is left.
  ArmInPlace InPlace() const;
  // Starts attempt() with recovery in place armed for it.
  void StartAttempt(StaticActions& out) const;
  bool WorkersAlive() const {
    return state_ == State::kRunning || state_ == State::kRecovering || state_ == State::kStopping;
  }

  int max_restarts_;
  State state_ = State::kIdle;
  int attempt_ = 0;
  int signal_ = 0;  // the latest signal muster received
  bool start_failed_ = false;
};

}  // namespace muster
