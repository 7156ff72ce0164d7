// What StaticFollower (static_follower.h) and ElasticFollower
// (elastic_follower.h) share: the actions both return, what an attempt's
// outcome is when they judge it, the exit codes of their rules, and the one
// rule both apply to a signal.
//
// Both followers take the worker group's events under the same names and
// signatures (OnSignal, OnWorkersPausing, OnWorkersPaused, OnRecoveryEnded,
// OnWorkersGone, OnWorkersSettled), so the agent feeds whichever one runs
// through one path (Agent::Tell).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "launcher/process/worker_group.h"

namespace muster {

// muster's exit code when a worker cannot be started: 127, as a shell says
// for a command it cannot run.
inline constexpr int kExitCodeCannotStart = 127;

// Stop the running workers with `signal` (the worker group escalates to
// SIGKILL after the shutdown timeout, or at once when already stopping).
struct StopWorkers {
  int signal = 0;
};
// Print the workers' failure report to stderr and keep the first failure as
// this node's root cause (the error file and exit code come from it).
// `restart_count`: the failure restarts used so far (static_follower.h,
// "Counters"); `in_place`: the failure is being recovered in place.
struct ReportFailureLocally {
  int restart_count = 0;
  int max_restarts = 0;
  bool in_place = false;
};
// Let the worker group recover a failure in place from now on
// (WorkerGroup::EnableInPlace), when this run recovers in place at all
// (--recovery; the agent knows): `generation` is the number G of the
// control protocol's `pause G` (static_follower.h, "Counters");
// `allowed`: a failure may be recovered in place now (a recovery counts as
// a restart, so one must be left); `hangs_elsewhere`: the generation spans
// other nodes, whose hangs a local hang probe may see.
struct ArmInPlace {
  uint64_t generation = 0;
  bool allowed = true;
  bool hangs_elsewhere = false;
};
// Give up the recovery in place under way: the group stops every worker
// instead, and the failure takes the restart path.
struct AbandonRecovery {
  std::string reason;
};
// Stop everything and exit with `exit_code`.
struct Finish {
  int exit_code = 0;
};

// A local worker's failure, as the group reports it when it pauses the
// others in place.
struct LocalFailure {
  int exit_code = 1;  // ExitStatus::ShellCode
  std::string message;
};

// How an attempt of the workers ended, once their output drained.
struct WorkersOutcome {
  WorkerGroup::State state = WorkerGroup::State::kSucceeded;  // kSucceeded, kFailed or kInterrupted
  // The first failure's exit code (128+signal when killed) and description;
  // unset when no worker failed on its own.
  std::optional<int> root_cause_exit_code;
  std::string root_cause;
};

// The rule both followers apply when muster receives `sig`: while some
// worker may run, the workers get the signal muster got, as torchrun
// forwards it (a second one escalates to SIGKILL), and muster exits
// ExitCodeOfSignal once they are gone; with none running it exits so now.
using SignalAnswer = std::variant<StopWorkers, Finish>;
inline SignalAnswer AnswerSignal(bool workers_alive, int sig) {
  if (workers_alive) return StopWorkers{sig};
  return Finish{ExitCodeOfSignal(sig)};
}

}  // namespace muster
