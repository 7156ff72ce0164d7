// StaticFollower: one test per transition rule of the table in
// launcher/decide/static_follower.h, named for the rule. Events in, actions out:
// actions are compared as short lines ("start attempt=1", "finish 3").
#include <catch2/catch.hpp>
#include <csignal>
#include <string>
#include <vector>

#include "launcher/decide/static_follower.h"

namespace muster {
namespace {

using State = StaticFollower::State;
using Lines = std::vector<std::string>;

std::string Show(const StaticAction& action) {
  if (const auto* a = std::get_if<StartAttemptWorkers>(&action)) {
    // Armed to pause as the attempt it starts (checked below); said only
    // when no recovery in place is allowed.
    CHECK(a->in_place.generation == static_cast<uint64_t>(a->attempt));
    CHECK_FALSE(a->in_place.hangs_elsewhere);
    return "start attempt=" + std::to_string(a->attempt) +
           (a->in_place.allowed ? "" : " (not in place)");
  }
  if (const auto* a = std::get_if<ArmInPlace>(&action)) {
    return "arm in place pause=" + std::to_string(a->generation) +
           (a->allowed ? "" : " (not allowed)");
  }
  if (const auto* a = std::get_if<AbandonRecovery>(&action)) {
    return "abandon recovery: " + a->reason;
  }
  if (const auto* a = std::get_if<StopWorkers>(&action)) {
    return "stop " + std::to_string(a->signal);
  }
  if (const auto* a = std::get_if<StartReplacements>(&action)) {
    return "start replacements attempt=" + std::to_string(a->attempt);
  }
  if (const auto* a = std::get_if<RejoinAttempt>(&action)) {
    return "rejoin attempt=" + std::to_string(a->attempt);
  }
  if (const auto* a = std::get_if<ReportFailureLocally>(&action)) {
    return "print failure report restart=" + std::to_string(a->restart_count) + " of " +
           std::to_string(a->max_restarts) + (a->in_place ? ", in place" : "");
  }
  if (const auto* a = std::get_if<AttemptSucceeded>(&action)) {
    return "succeeded attempt=" + std::to_string(a->attempt);
  }
  return "finish " + std::to_string(std::get<Finish>(action).exit_code);
}

Lines Show(const StaticActions& actions) {
  Lines lines;
  for (const auto& action : actions) lines.push_back(Show(action));
  return lines;
}

WorkersOutcome Failed(int code) {
  WorkersOutcome outcome;
  outcome.state = WorkerGroup::State::kFailed;
  outcome.root_cause_exit_code = code;
  outcome.root_cause = "exited with " + std::to_string(code);
  return outcome;
}

WorkersOutcome Succeeded() { return WorkersOutcome{}; }

const LocalFailure kKilled{137, "killed by SIGKILL"};

// The workers of the attempt ended: gone, then settled as `outcome`.
StaticActions Ended(StaticFollower& follower, const WorkersOutcome& outcome) {
  follower.OnWorkersGone();
  return follower.OnWorkersSettled(outcome);
}

TEST_CASE("the first attempt starts as attempt 0", "[static-follower]") {
  StaticFollower follower(3);
  CHECK(Show(follower.OnStart()) == Lines{"start attempt=0"});
  CHECK(follower.state() == State::kRunning);
  CHECK(follower.attempt() == 0);
  CHECK(follower.OnStart().empty());
}

TEST_CASE("a failure restarts every worker as the next attempt while restarts are left",
          "[static-follower]") {
  StaticFollower follower(2);
  follower.OnStart();
  CHECK(Show(Ended(follower, Failed(3))) ==
        Lines{"print failure report restart=0 of 2", "start attempt=1"});
  CHECK(follower.attempt() == 1);
  CHECK(Show(Ended(follower, Failed(3))) ==
        Lines{"print failure report restart=1 of 2", "start attempt=2 (not in place)"});
  CHECK(follower.state() == State::kRunning);
}

TEST_CASE("a failure with no restart left finishes with the root cause's code",
          "[static-follower]") {
  StaticFollower follower(1);
  follower.OnStart();
  Ended(follower, Failed(3));
  CHECK(Show(Ended(follower, Failed(7))) ==
        Lines{"print failure report restart=1 of 1", "finish 7"});
  CHECK(follower.state() == State::kFinished);
}

TEST_CASE("max-restarts 0 never restarts", "[static-follower]") {
  StaticFollower follower(0);
  follower.OnStart();
  CHECK(Show(Ended(follower, Failed(1))) ==
        Lines{"print failure report restart=0 of 0", "finish 1"});
}

TEST_CASE("a failure with no failed worker finishes 1", "[static-follower]") {
  StaticFollower follower(0);
  follower.OnStart();
  WorkersOutcome outcome;
  outcome.state = WorkerGroup::State::kFailed;
  CHECK(Show(Ended(follower, outcome)) == Lines{"print failure report restart=0 of 0", "finish 1"});
}

TEST_CASE("success finishes 0 and names the attempt", "[static-follower]") {
  StaticFollower follower(3);
  follower.OnStart();
  Ended(follower, Failed(1));
  CHECK(Show(Ended(follower, Succeeded())) == Lines{"succeeded attempt=1", "finish 0"});
  CHECK(follower.state() == State::kFinished);
}

TEST_CASE("a signal stops the running workers, and muster exits 128+signal once they are gone",
          "[static-follower]") {
  StaticFollower follower(3);
  follower.OnStart();
  CHECK(Show(follower.OnSignal(SIGTERM)) == Lines{"stop 15"});
  CHECK(follower.state() == State::kStopping);
  // A second signal is forwarded too (the group escalates to SIGKILL).
  CHECK(Show(follower.OnSignal(SIGINT)) == Lines{"stop 2"});
  WorkersOutcome interrupted;
  interrupted.state = WorkerGroup::State::kInterrupted;
  CHECK(Show(Ended(follower, interrupted)) == Lines{"finish 130"});
}

TEST_CASE("a signal before any start or while the output drains finishes at once",
          "[static-follower]") {
  StaticFollower idle(3);
  CHECK(Show(idle.OnSignal(SIGTERM)) == Lines{"finish 143"});
  CHECK(idle.OnStart().empty());

  StaticFollower settling(3);
  settling.OnStart();
  settling.OnWorkersGone();
  CHECK(Show(settling.OnSignal(SIGINT)) == Lines{"finish 130"});
  CHECK(settling.OnWorkersSettled(Failed(1)).empty());
}

TEST_CASE("a start that fails with no worker left finishes 127", "[static-follower]") {
  StaticFollower follower(3);
  follower.OnStart();
  CHECK(Show(follower.OnStartFailed(/*workers_stopping=*/false)) == Lines{"finish 127"});
  CHECK(follower.state() == State::kFinished);
}

TEST_CASE("a start that fails after some workers started finishes 127 once they are gone",
          "[static-follower]") {
  StaticFollower follower(3);
  follower.OnStart();
  CHECK(follower.OnStartFailed(/*workers_stopping=*/true).empty());
  CHECK(follower.state() == State::kStopping);
  CHECK(Show(Ended(follower, Failed(1))) == Lines{"finish 127"});
}

// --- in-place recovery -------------------------------------------------------

TEST_CASE("a failure recovered in place counts as a restart and starts its ranks early",
          "[static-follower][in-place]") {
  StaticFollower follower(3);
  follower.OnStart();
  CHECK(Show(follower.OnWorkersPausing(kKilled)) ==
        Lines{"print failure report restart=0 of 3, in place", "start replacements attempt=1"});
  CHECK(follower.state() == State::kRecovering);
  CHECK(follower.attempt() == 0);  // the survivors still belong to attempt 0
  CHECK(Show(follower.OnWorkersPaused()) == Lines{"rejoin attempt=1"});
  // Recovered: the survivors' next failure may be recovered in place too.
  CHECK(Show(follower.OnRecoveryEnded(/*recovered=*/true)) == Lines{"arm in place pause=1"});
  CHECK(follower.state() == State::kRunning);
  CHECK(follower.attempt() == 1);
  // The next failure is the next restart.
  CHECK(Show(follower.OnWorkersPausing(kKilled)) ==
        Lines{"print failure report restart=1 of 3, in place", "start replacements attempt=2"});
}

TEST_CASE("a recovery that falls back restarts as the attempt the recovery began",
          "[static-follower][in-place]") {
  StaticFollower follower(3);
  follower.OnStart();
  follower.OnWorkersPausing(kKilled);
  CHECK(follower.OnRecoveryEnded(/*recovered=*/false).empty());
  CHECK(follower.state() == State::kRunning);
  CHECK(follower.attempt() == 0);
  CHECK(Show(Ended(follower, Failed(137))) ==
        Lines{"print failure report restart=0 of 3", "start attempt=1"});
  CHECK(follower.attempt() == 1);
}

TEST_CASE("no recovery in place without a restart left", "[static-follower][in-place]") {
  StaticFollower follower(1);
  CHECK(Show(follower.OnStart()) == Lines{"start attempt=0"});
  follower.OnWorkersPausing(kKilled);
  follower.OnWorkersPaused();
  // The one restart is used: the group is armed, but not allowed to pause.
  CHECK(Show(follower.OnRecoveryEnded(/*recovered=*/true)) ==
        Lines{"arm in place pause=1 (not allowed)"});
  // Should it pause all the same, the recovery is abandoned: the failure
  // takes the restart path, which ends the job.
  CHECK(Show(follower.OnWorkersPausing(kKilled)) ==
        Lines{"abandon recovery: no restart is left (--max-restarts)"});
  CHECK(follower.state() == State::kRunning);
  CHECK(follower.OnWorkersPaused().empty());
  CHECK(follower.OnRecoveryEnded(/*recovered=*/false).empty());
  CHECK(Show(Ended(follower, Failed(137))) ==
        Lines{"print failure report restart=1 of 1", "finish 137"});
}

TEST_CASE("an attempt that starts with no restart left is armed but not allowed in place",
          "[static-follower][in-place]") {
  StaticFollower follower(1);
  follower.OnStart();
  CHECK(Show(Ended(follower, Failed(1))) ==
        Lines{"print failure report restart=0 of 1", "start attempt=1 (not in place)"});
}

TEST_CASE("a signal during a recovery stops the workers and its end changes nothing",
          "[static-follower][in-place]") {
  StaticFollower follower(3);
  follower.OnStart();
  follower.OnWorkersPausing(kKilled);
  CHECK(Show(follower.OnSignal(SIGTERM)) == Lines{"stop 15"});
  CHECK(follower.OnRecoveryEnded(/*recovered=*/false).empty());
  CHECK(follower.state() == State::kStopping);
  CHECK(follower.OnWorkersPaused().empty());
  WorkersOutcome interrupted;
  interrupted.state = WorkerGroup::State::kInterrupted;
  CHECK(Show(Ended(follower, interrupted)) == Lines{"finish 143"});
  CHECK(follower.attempt() == 0);
}

TEST_CASE("pause events outside a recovery are ignored", "[static-follower][in-place]") {
  StaticFollower follower(3);
  CHECK(follower.OnWorkersPausing(kKilled).empty());
  follower.OnStart();
  CHECK(follower.OnWorkersPaused().empty());
  CHECK(follower.OnRecoveryEnded(/*recovered=*/true).empty());
  CHECK(follower.attempt() == 0);
}

}  // namespace
}  // namespace muster
