// ElasticFollower: one test per transition rule of the table in
// launcher/decide/elastic_follower.h, named for the rule. Events in, actions out:
// actions are compared as short lines ("stop SIGTERM", "start gen=2").
// The last tests carry the start and stop actions out on a WorkerGroup with a
// fake spawner and fake time, to show that the signal each stop names reaches
// every worker's process group through the spawner (Agent::Follow itself is
// not run here).
#include <catch2/catch.hpp>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "launcher/decide/elastic_follower.h"
#include "tests/unit/launcher_fake_spawner.h"

namespace muster {
namespace {

using State = ElasticFollower::State;
using StopReason = ElasticFollower::StopReason;
using Lines = std::vector<std::string>;
using namespace std::chrono_literals;

std::string SignalText(int sig) {
  switch (sig) {
    case SIGTERM:
      return "SIGTERM";
    case SIGKILL:
      return "SIGKILL";
    case SIGINT:
      return "SIGINT";
    default:
      return std::to_string(sig);
  }
}

std::string Show(const FollowerAction& action) {
  if (const auto* a = std::get_if<StartWorkers>(&action)) {
    return "start gen=" + std::to_string(a->assignment.generation);
  }
  if (const auto* a = std::get_if<StopWorkers>(&action)) return "stop " + SignalText(a->signal);
  if (const auto* a = std::get_if<ReportSucceeded>(&action)) {
    return "report succeeded gen=" + std::to_string(a->generation) +
           (a->repeated ? " (repeated)" : "");
  }
  if (const auto* a = std::get_if<ReportFailure>(&action)) {
    return "report failure gen=" + std::to_string(a->generation) +
           " code=" + std::to_string(a->exit_code) + ": " + a->message;
  }
  if (const auto* a = std::get_if<ReportFailureLocally>(&action)) {
    return "print failure report restart=" + std::to_string(a->restart_count) + " of " +
           std::to_string(a->max_restarts) +
           (a->restart_count < a->max_restarts ? ", will restart" : ", last") +
           (a->in_place ? ", in place" : "");
  }
  if (std::holds_alternative<PauseWorkers>(action)) return "pause";
  if (const auto* a = std::get_if<RejoinWorkers>(&action)) {
    return "rejoin gen=" + std::to_string(a->assignment.generation);
  }
  if (std::holds_alternative<ClearCurrent>(action)) return "clear current";
  if (std::holds_alternative<SealStore>(action)) return "seal store";
  if (std::holds_alternative<LeaveRendezvous>(action)) return "leave";
  if (const auto* a = std::get_if<ArmInPlace>(&action)) {
    return "arm in place pause=" + std::to_string(a->generation);
  }
  return "finish " + std::to_string(std::get<Finish>(action).exit_code);
}

Lines Show(const FollowerActions& actions) {
  Lines lines;
  for (const auto& action : actions) lines.push_back(Show(action));
  return lines;
}

rdzv::Assignment Gen(uint64_t generation, int restart_count = 0, int max_restarts = 3) {
  rdzv::Assignment a;
  a.run_id = "job";
  a.generation = generation;
  a.local_world_size = 2;
  a.group_world_size = 1;
  a.world_size = 2;
  a.restart_count = restart_count;
  a.max_restarts = max_restarts;
  return a;
}

WorkersOutcome Succeeded() { return WorkersOutcome{WorkerGroup::State::kSucceeded, {}, ""}; }
WorkersOutcome Failed(int code = 3) {
  return WorkersOutcome{WorkerGroup::State::kFailed, code, "exited with " + std::to_string(code)};
}
WorkersOutcome Interrupted() { return WorkersOutcome{WorkerGroup::State::kInterrupted, {}, ""}; }

// The workers exit and their output drains.
FollowerActions Settle(ElasticFollower& follower, const WorkersOutcome& outcome) {
  follower.OnWorkersGone();
  return follower.OnWorkersSettled(outcome);
}

// A follower whose workers run generation `generation`.
ElasticFollower RunningGeneration(uint64_t generation) {
  ElasticFollower follower;
  REQUIRE(Show(follower.OnAssignment(Gen(generation))) ==
          Lines{"start gen=" + std::to_string(generation)});
  REQUIRE(follower.state() == State::kRunning);
  return follower;
}

// --- assignments -----------------------------------------------------------

TEST_CASE("the first assignment starts its generation's workers", "[follower]") {
  ElasticFollower follower;
  CHECK(follower.state() == State::kIdle);
  CHECK(Show(follower.OnAssignment(Gen(1))) == Lines{"start gen=1"});
  CHECK(follower.state() == State::kRunning);
  CHECK(follower.current() == Gen(1));
  CHECK_FALSE(follower.pending());
}

TEST_CASE("a new assignment while workers run stops them first, then starts the new generation",
          "[follower]") {
  auto follower = RunningGeneration(1);
  CHECK(Show(follower.OnAssignment(Gen(2))) == Lines{"stop SIGTERM"});
  CHECK(follower.state() == State::kStopping);
  CHECK(follower.stop_reason() == StopReason::kReassigned);
  CHECK(follower.pending() == Gen(2));
  CHECK(Show(Settle(follower, Interrupted())) == Lines{"clear current", "start gen=2"});
  CHECK(follower.state() == State::kRunning);
  CHECK(follower.current() == Gen(2));
  CHECK(follower.stop_reason() == StopReason::kNone);
}

TEST_CASE("a newer assignment while the workers already stop asks again (the group escalates)",
          "[follower]") {
  auto follower = RunningGeneration(1);
  follower.OnAssignment(Gen(2));
  CHECK(Show(follower.OnAssignment(Gen(3))) == Lines{"stop SIGTERM"});
  CHECK(follower.pending() == Gen(3));
  CHECK(Show(Settle(follower, Interrupted())) == Lines{"clear current", "start gen=3"});
}

TEST_CASE("a new assignment while the output drains waits, then starts once settled",
          "[follower]") {
  auto follower = RunningGeneration(1);
  follower.OnWorkersGone();
  CHECK(follower.state() == State::kSettling);
  CHECK(follower.OnAssignment(Gen(2)).empty());
  CHECK(Show(follower.OnWorkersSettled(Succeeded())) ==
        Lines{"report succeeded gen=1", "start gen=2"});
  CHECK(follower.state() == State::kRunning);
}

TEST_CASE("an assignment older than the generation started here is ignored", "[follower]") {
  auto follower = RunningGeneration(3);
  CHECK(follower.OnAssignment(Gen(2)).empty());
  Settle(follower, Succeeded());
  CHECK(follower.OnAssignment(Gen(2)).empty());
  CHECK(follower.state() == State::kIdle);
}

TEST_CASE("a repeated assignment while its workers run or settle changes nothing", "[follower]") {
  auto follower = RunningGeneration(2);
  CHECK(follower.OnAssignment(Gen(2)).empty());
  CHECK(follower.state() == State::kRunning);
  follower.OnWorkersGone();
  CHECK(follower.OnAssignment(Gen(2)).empty());
  CHECK(follower.state() == State::kSettling);
}

TEST_CASE("a repeated assignment after success reports the success again", "[follower]") {
  auto follower = RunningGeneration(2);
  Settle(follower, Succeeded());
  CHECK(Show(follower.OnAssignment(Gen(2))) == Lines{"report succeeded gen=2 (repeated)"});
  CHECK(follower.state() == State::kIdle);
}

TEST_CASE("a repeated assignment after a failure reports it again with this node's exit code",
          "[follower]") {
  auto follower = RunningGeneration(2);
  Settle(follower, Failed(7));
  CHECK(Show(follower.OnAssignment(Gen(2))) ==
        Lines{"report failure gen=2 code=7: the workers of generation 2 already stopped on this "
              "node"});
  CHECK(follower.state() == State::kIdle);
}

// --- waiting ----------------------------------------------------------------

TEST_CASE("waiting seals the store and stops the running workers, and nothing starts after them",
          "[follower]") {
  auto follower = RunningGeneration(1);
  CHECK(Show(follower.OnWaiting()) == Lines{"seal store", "stop SIGTERM"});
  CHECK(follower.stop_reason() == StopReason::kReassigned);
  CHECK(Show(Settle(follower, Interrupted())) == Lines{"clear current"});
  CHECK(follower.state() == State::kIdle);
}

TEST_CASE("waiting drops the generation pending behind a stop", "[follower]") {
  auto follower = RunningGeneration(1);
  follower.OnAssignment(Gen(2));
  CHECK(Show(follower.OnWaiting()) == Lines{"seal store", "stop SIGTERM"});
  CHECK_FALSE(follower.pending());
  CHECK(Show(Settle(follower, Interrupted())) == Lines{"clear current"});
  CHECK(follower.state() == State::kIdle);
}

TEST_CASE("waiting with no worker running only seals the store", "[follower]") {
  ElasticFollower follower;
  CHECK(Show(follower.OnWaiting()) == Lines{"seal store"});
  CHECK(follower.state() == State::kIdle);
}

// --- fencing ----------------------------------------------------------------

TEST_CASE("a fence clears the current generation, seals the store and kills the workers",
          "[follower]") {
  auto follower = RunningGeneration(1);
  CHECK(Show(follower.OnFence()) == Lines{"clear current", "seal store", "stop SIGKILL"});
  CHECK(follower.stop_reason() == StopReason::kFenced);
  CHECK_FALSE(follower.current());
  CHECK(Show(Settle(follower, Interrupted())) == Lines{"clear current"});
  CHECK(follower.state() == State::kIdle);
}

TEST_CASE("a fence outranks a reassignment under way and drops its pending generation",
          "[follower]") {
  auto follower = RunningGeneration(1);
  follower.OnAssignment(Gen(2));
  CHECK(Show(follower.OnFence()) == Lines{"clear current", "seal store", "stop SIGKILL"});
  CHECK(follower.stop_reason() == StopReason::kFenced);
  CHECK_FALSE(follower.pending());
  CHECK(Show(Settle(follower, Interrupted())) == Lines{"clear current"});
}

TEST_CASE("a reassignment after a fence does not take the fence's place", "[follower]") {
  auto follower = RunningGeneration(1);
  follower.OnFence();
  CHECK(Show(follower.OnAssignment(Gen(2))) == Lines{"stop SIGTERM"});
  CHECK(follower.stop_reason() == StopReason::kFenced);
  // The fence dropped generation 1; generation 2 came after it and starts.
  CHECK(Show(Settle(follower, Interrupted())) == Lines{"clear current", "start gen=2"});
}

TEST_CASE("a fence with no worker running stops nothing", "[follower]") {
  ElasticFollower follower;
  CHECK(Show(follower.OnFence()) == Lines{"clear current", "seal store"});
  CHECK(follower.state() == State::kIdle);
}

TEST_CASE("a fence while the output drains keeps the generation from being reported",
          "[follower]") {
  auto follower = RunningGeneration(1);
  follower.OnWorkersGone();
  CHECK(Show(follower.OnFence()) == Lines{"clear current", "seal store"});
  CHECK(follower.OnWorkersSettled(Succeeded()).empty());
  CHECK(follower.state() == State::kIdle);
}

// --- the run's end ----------------------------------------------------------

TEST_CASE("the run's end with no worker running finishes at once, 0 when it succeeded",
          "[follower]") {
  auto follower = RunningGeneration(1);
  Settle(follower, Succeeded());
  CHECK(Show(follower.OnRunEnded(true)) == Lines{"finish 0"});
  CHECK(follower.state() == State::kFinished);
}

TEST_CASE("a failed run's end exits with this node's root-cause code, or 1 when it was elsewhere",
          "[follower]") {
  ElasticFollower elsewhere;
  CHECK(Show(elsewhere.OnRunEnded(false)) == Lines{"finish 1"});

  auto here = RunningGeneration(1);
  Settle(here, Failed(9));
  CHECK(here.failure_exit_code() == 9);
  CHECK(Show(here.OnRunEnded(false)) == Lines{"finish 9"});
}

TEST_CASE("the run's end while workers run stops them, then finishes", "[follower]") {
  auto follower = RunningGeneration(1);
  CHECK(Show(follower.OnRunEnded(true)) == Lines{"stop SIGTERM"});
  CHECK(follower.stop_reason() == StopReason::kRunEnded);
  CHECK(Show(Settle(follower, Interrupted())) == Lines{"clear current", "finish 0"});
  CHECK(follower.state() == State::kFinished);
}

TEST_CASE("the run's end while the output drains finishes once settled", "[follower]") {
  auto follower = RunningGeneration(1);
  follower.OnWorkersGone();
  CHECK(follower.OnRunEnded(true).empty());
  CHECK(Show(follower.OnWorkersSettled(Succeeded())) ==
        Lines{"report succeeded gen=1", "finish 0"});
}

TEST_CASE("the run's end outranks a reassignment under way: the pending generation never starts",
          "[follower]") {
  auto follower = RunningGeneration(1);
  follower.OnAssignment(Gen(2));
  CHECK(Show(follower.OnRunEnded(false)) == Lines{"stop SIGTERM"});
  CHECK(follower.stop_reason() == StopReason::kRunEnded);
  CHECK(Show(Settle(follower, Interrupted())) == Lines{"clear current", "finish 1"});
}

TEST_CASE("losing the rendezvous with no worker running finishes as failed", "[follower]") {
  auto follower = RunningGeneration(1);
  Settle(follower, Failed(4));
  CHECK(Show(follower.OnRendezvousFailed()) == Lines{"finish 4"});
  CHECK(follower.state() == State::kFinished);
}

TEST_CASE("losing the rendezvous while workers run stops them, then finishes as failed",
          "[follower]") {
  auto follower = RunningGeneration(1);
  CHECK(Show(follower.OnRendezvousFailed()) == Lines{"stop SIGTERM"});
  CHECK(Show(Settle(follower, Interrupted())) == Lines{"clear current", "finish 1"});
}

// --- signals ----------------------------------------------------------------

TEST_CASE("a signal while workers run leaves the run, forwards the signal, exits 128+signal",
          "[follower]") {
  auto follower = RunningGeneration(1);
  CHECK(Show(follower.OnSignal(SIGINT)) == Lines{"leave", "stop SIGINT"});
  CHECK(follower.stop_reason() == StopReason::kSignal);
  CHECK(Show(Settle(follower, Interrupted())) == Lines{"finish 130"});
  CHECK(follower.state() == State::kFinished);
}

TEST_CASE("a signal with no worker running leaves the run and exits 128+signal at once",
          "[follower]") {
  ElasticFollower idle;
  CHECK(Show(idle.OnSignal(SIGTERM)) == Lines{"leave", "finish 143"});
  CHECK(idle.state() == State::kFinished);

  auto settling = RunningGeneration(1);
  settling.OnWorkersGone();
  CHECK(Show(settling.OnSignal(SIGTERM)) == Lines{"leave", "finish 143"});
}

TEST_CASE("a signal outranks a fence or a run's end that comes after it", "[follower]") {
  auto follower = RunningGeneration(1);
  follower.OnSignal(SIGTERM);
  CHECK(Show(follower.OnFence()) == Lines{"clear current", "seal store", "stop SIGKILL"});
  CHECK(Show(follower.OnRunEnded(true)) == Lines{"stop SIGTERM"});
  CHECK(follower.stop_reason() == StopReason::kSignal);
  CHECK(Show(Settle(follower, Interrupted())) == Lines{"finish 143"});
}

TEST_CASE("a signal takes over from a fence already stopping the workers", "[follower]") {
  auto follower = RunningGeneration(1);
  follower.OnFence();
  CHECK(Show(follower.OnSignal(SIGINT)) == Lines{"leave", "stop SIGINT"});
  CHECK(Show(Settle(follower, Interrupted())) == Lines{"finish 130"});
}

// --- starts that fail -------------------------------------------------------

TEST_CASE(
    "a start that fails before any worker runs reports 127 and waits for the next "
    "assignment",
    "[follower]") {
  auto follower = RunningGeneration(1);
  CHECK(Show(follower.OnStartFailed("cannot start '/bin/x'", false)) ==
        Lines{"clear current", "report failure gen=1 code=127: cannot start '/bin/x'"});
  CHECK(follower.state() == State::kIdle);
  CHECK(Show(follower.OnAssignment(Gen(2))) == Lines{"start gen=2"});
}

TEST_CASE("a start that fails after some workers started reports 127 once they are gone",
          "[follower]") {
  auto follower = RunningGeneration(1);
  CHECK(follower.OnStartFailed("cannot start '/bin/x'", true).empty());
  CHECK(follower.state() == State::kRunning);
  CHECK(Show(Settle(follower, Failed(143))) ==
        Lines{"report failure gen=1 code=127: cannot start '/bin/x'", "clear current"});
  CHECK(follower.state() == State::kIdle);
}

TEST_CASE("a failed start is not reported when this node stopped the workers for a new generation",
          "[follower]") {
  auto follower = RunningGeneration(1);
  follower.OnStartFailed("cannot start '/bin/x'", true);
  follower.OnAssignment(Gen(2));
  CHECK(Show(Settle(follower, Failed(143))) == Lines{"clear current", "start gen=2"});
}

// --- outcomes ---------------------------------------------------------------

TEST_CASE("workers that all succeed are reported, and the node waits for what comes next",
          "[follower]") {
  auto follower = RunningGeneration(1);
  CHECK(Show(Settle(follower, Succeeded())) == Lines{"report succeeded gen=1"});
  CHECK(follower.state() == State::kIdle);
  // The generation stays current: the client keeps telling the daemon.
  CHECK(follower.current() == Gen(1));
}

TEST_CASE(
    "workers that fail on their own are reported with the root cause's code, and the store "
    "is sealed",
    "[follower]") {
  ElasticFollower follower;
  follower.OnAssignment(Gen(4, /*restart_count=*/1, /*max_restarts=*/3));
  CHECK(Show(Settle(follower, Failed(3))) ==
        Lines{"print failure report restart=1 of 3, will restart",
              "report failure gen=4 code=3: exited with 3", "seal store", "clear current"});
  CHECK(follower.state() == State::kIdle);
  CHECK(follower.failure_exit_code() == 3);
}

TEST_CASE("the failure report says when no restart is left", "[follower]") {
  ElasticFollower follower;
  follower.OnAssignment(Gen(4, /*restart_count=*/3, /*max_restarts=*/3));
  CHECK(Show(Settle(follower, Failed(3))).front() == "print failure report restart=3 of 3, last");
}

TEST_CASE("a failure without a root cause here is reported with the earlier code, or 1",
          "[follower]") {
  auto follower = RunningGeneration(1);
  CHECK(Show(Settle(follower, WorkersOutcome{WorkerGroup::State::kFailed, {}, ""})) ==
        Lines{"report failure gen=1 code=1: ", "seal store", "clear current"});
}

TEST_CASE("workers this node stopped are not reported: the generation is only cleared",
          "[follower]") {
  auto follower = RunningGeneration(1);
  follower.OnWaiting();
  CHECK(Show(Settle(follower, Failed(143))) == Lines{"clear current"});
  CHECK(follower.failure_exit_code() == 1);
}

TEST_CASE("a success that races a stop is still reported", "[follower]") {
  auto follower = RunningGeneration(1);
  follower.OnAssignment(Gen(2));
  CHECK(Show(Settle(follower, Succeeded())) == Lines{"report succeeded gen=1", "start gen=2"});
}

TEST_CASE("after finishing, every event is ignored", "[follower]") {
  ElasticFollower follower;
  follower.OnRunEnded(true);
  REQUIRE(follower.state() == State::kFinished);
  CHECK(follower.OnAssignment(Gen(1)).empty());
  CHECK(follower.OnWaiting().empty());
  CHECK(follower.OnFence().empty());
  CHECK(follower.OnRunEnded(false).empty());
  CHECK(follower.OnRendezvousFailed().empty());
  CHECK(follower.OnSignal(SIGTERM).empty());
  follower.OnWorkersGone();
  CHECK(follower.OnWorkersSettled(Succeeded()).empty());
  CHECK(follower.state() == State::kFinished);
}

// --- the follower's stops, carried out through a spawner ---------------------

// Carries out the worker actions as the agent does: a WorkerGroup of two
// workers per generation, on a fake spawner, at fake times.
struct WorkersOnFakeSpawner {
  void CarryOut(const FollowerActions& actions) {
    for (const auto& action : actions) {
      if (const auto* start = std::get_if<StartWorkers>(&action)) {
        group = std::make_unique<WorkerGroup>(
            spawner, static_cast<uint32_t>(start->assignment.generation), 30s);
        std::vector<WorkerSpec> specs(2);
        specs[1].local_rank = 1;
        REQUIRE(group->Start(std::move(specs), now).ok());
      } else if (const auto* stop = std::get_if<StopWorkers>(&action)) {
        group->Stop(stop->signal, now);
      }
    }
  }
  testing::FakeSpawner spawner;
  std::unique_ptr<WorkerGroup> group;
  Time now{};
};

TEST_CASE("a stop for a new generation reaches every worker's process group through the spawner",
          "[follower][spawner]") {
  ElasticFollower follower;
  WorkersOnFakeSpawner workers;
  workers.CarryOut(follower.OnAssignment(Gen(1)));
  REQUIRE(workers.spawner.spawned.size() == 2);
  workers.CarryOut(follower.OnAssignment(Gen(2)));
  CHECK(workers.spawner.signals ==
        std::vector<std::pair<pid_t, int>>{
            {1000, SIGTERM}, {1000, SIGCONT}, {1001, SIGTERM}, {1001, SIGCONT}});
  // The group gives up waiting after its shutdown timeout: SIGKILL, the same way.
  workers.group->OnTick(workers.now + 30s);
  CHECK(workers.spawner.signals.back() == std::pair<pid_t, int>{1001, SIGKILL});
}

TEST_CASE("a fence kills every worker's process group through the spawner", "[follower][spawner]") {
  ElasticFollower follower;
  WorkersOnFakeSpawner workers;
  workers.CarryOut(follower.OnAssignment(Gen(1)));
  workers.CarryOut(follower.OnFence());
  CHECK(workers.spawner.signals ==
        std::vector<std::pair<pid_t, int>>{{1000, SIGKILL}, {1001, SIGKILL}});
  CHECK(workers.spawner.process_signals.empty());
}

TEST_CASE("a signal to muster is forwarded to every worker's process group through the spawner",
          "[follower][spawner]") {
  ElasticFollower follower;
  WorkersOnFakeSpawner workers;
  workers.CarryOut(follower.OnAssignment(Gen(1)));
  workers.CarryOut(follower.OnSignal(SIGINT));
  CHECK(workers.spawner.signals ==
        std::vector<std::pair<pid_t, int>>{
            {1000, SIGINT}, {1000, SIGCONT}, {1001, SIGINT}, {1001, SIGCONT}});
}

// --- in-place recovery -------------------------------------------------------

// A follower whose workers of `generation` can all be paused.
ElasticFollower PausableGeneration(uint64_t generation) {
  ElasticFollower follower = RunningGeneration(generation);
  follower.SetWorkersCanPause(true);
  return follower;
}

TEST_CASE("a new assignment pauses workers that can pause, then rejoins them to it",
          "[follower][in-place]") {
  auto follower = PausableGeneration(1);
  CHECK(Show(follower.OnAssignment(Gen(2))) == Lines{"pause"});
  CHECK(follower.state() == State::kPausing);
  CHECK(follower.pending() == Gen(2));
  CHECK(Show(follower.OnWorkersPaused()) == Lines{"clear current", "rejoin gen=2"});
  CHECK(follower.state() == State::kRunning);
  CHECK(follower.current() == Gen(2));
  CHECK_FALSE(follower.pending());
}

TEST_CASE("workers that cannot all pause are stopped as before", "[follower][in-place]") {
  auto follower = RunningGeneration(1);
  follower.SetWorkersCanPause(false);
  CHECK(Show(follower.OnAssignment(Gen(2))) == Lines{"stop SIGTERM"});
  CHECK(follower.state() == State::kStopping);
}

TEST_CASE("Waiting pauses workers that can pause, the next assignment rejoins them",
          "[follower][in-place]") {
  auto follower = PausableGeneration(1);
  CHECK(Show(follower.OnWaiting()) == Lines{"seal store", "pause"});
  CHECK(Show(follower.OnWorkersPaused()) == Lines{"clear current"});
  CHECK(follower.state() == State::kPaused);
  CHECK_FALSE(follower.current());
  CHECK(follower.OnWaiting().size() == 1);  // seal store; they are paused already
  CHECK(Show(follower.OnAssignment(Gen(2))) == Lines{"rejoin gen=2"});
  CHECK(follower.state() == State::kRunning);
}

TEST_CASE("workers the group paused with no local failure wait for the next generation",
          "[follower][in-place]") {
  // A hang probe every local worker answered: the hang is another node's,
  // whose failure ends this generation.
  auto follower = PausableGeneration(1);
  CHECK(Show(follower.OnWorkersPaused()) == Lines{"clear current"});  // nothing failed here
  CHECK(follower.state() == State::kPaused);
  CHECK_FALSE(follower.current());
  CHECK(Show(follower.OnWaiting()) == Lines{"seal store"});
  CHECK(Show(follower.OnAssignment(Gen(2))) == Lines{"rejoin gen=2"});
  CHECK(follower.state() == State::kRunning);
}

TEST_CASE("an assignment while pausing waits for the pause, the newest one wins",
          "[follower][in-place]") {
  auto follower = PausableGeneration(1);
  follower.OnWaiting();
  CHECK(follower.OnAssignment(Gen(2)).empty());
  CHECK(follower.OnAssignment(Gen(3)).empty());
  CHECK(Show(follower.OnWorkersPaused()) == Lines{"clear current", "rejoin gen=3"});
}

TEST_CASE("a local failure paused in place is reported once every survivor paused",
          "[follower][in-place]") {
  auto follower = RunningGeneration(1);
  CHECK(Show(follower.OnWorkersPausing({137, "rank 1 killed"})) ==
        Lines{"print failure report restart=0 of 3, will restart, in place"});
  CHECK(follower.state() == State::kPausing);
  CHECK(Show(follower.OnWorkersPaused()) ==
        Lines{"report failure gen=1 code=137: rank 1 killed", "clear current"});
  CHECK(follower.state() == State::kPaused);
  CHECK(follower.failure_exit_code() == 137);
  CHECK(Show(follower.OnAssignment(Gen(2))) == Lines{"rejoin gen=2"});
}

TEST_CASE("the run ending while paused or pausing stops the paused workers",
          "[follower][in-place]") {
  SECTION("paused") {
    auto follower = PausableGeneration(1);
    follower.OnWorkersPausing({137, "killed"});
    follower.OnWorkersPaused();
    CHECK(Show(follower.OnRunEnded(false)) == Lines{"stop SIGTERM"});
    // (Telling the client again that nothing runs here costs nothing.)
    CHECK(Show(Settle(follower, Interrupted())) == Lines{"clear current", "finish 137"});
  }
  SECTION("pausing") {
    auto follower = PausableGeneration(1);
    follower.OnWaiting();
    CHECK(Show(follower.OnRunEnded(true)) == Lines{"stop SIGTERM"});
    CHECK(Show(Settle(follower, Interrupted())) == Lines{"clear current", "finish 0"});
  }
}

TEST_CASE("a fence or a signal stops paused workers", "[follower][in-place]") {
  SECTION("fence: SIGKILL") {
    auto follower = PausableGeneration(1);
    follower.OnWaiting();
    follower.OnWorkersPaused();
    CHECK(Show(follower.OnFence()) == Lines{"clear current", "seal store", "stop SIGKILL"});
  }
  SECTION("signal: forwarded") {
    auto follower = PausableGeneration(1);
    follower.OnWaiting();
    follower.OnWorkersPaused();
    CHECK(Show(follower.OnSignal(SIGINT)) == Lines{"leave", "stop SIGINT"});
    CHECK(Show(Settle(follower, Interrupted())) == Lines{"finish 130"});
  }
}

TEST_CASE(
    "a generation that ends while the workers join it pauses them again, and the next rejoins them",
    "[follower][in-place]") {
  auto follower = RunningGeneration(1);
  follower.OnWorkersPausing({137, "rank 1 killed"});
  follower.OnWorkersPaused();
  CHECK(Show(follower.OnAssignment(Gen(2))) == Lines{"rejoin gen=2"});
  // Joining, every process speaks the channel: the group can pause them.
  follower.SetWorkersCanPause(true);
  CHECK(Show(follower.OnWaiting()) == Lines{"seal store", "pause"});
  // The failure was reported with the first pause: not again.
  CHECK(Show(follower.OnWorkersPaused()) == Lines{"clear current"});
  CHECK(Show(follower.OnAssignment(Gen(3))) == Lines{"rejoin gen=3"});
  CHECK(follower.current() == Gen(3));
}

TEST_CASE("a pause that falls back settles as the failure it is", "[follower][in-place]") {
  auto follower = RunningGeneration(1);
  follower.OnWorkersPausing({137, "killed"});
  // The group gave up on the pause and stopped everyone: no early report.
  CHECK(Show(Settle(follower, Failed(137))) ==
        Lines{"print failure report restart=0 of 3, will restart",
              "report failure gen=1 code=137: exited with 137", "seal store", "clear current"});
  CHECK(follower.state() == State::kIdle);
}

TEST_CASE("a worker that dies while paused between generations is reported locally",
          "[follower][in-place]") {
  ElasticFollower follower;
  follower.OnAssignment(Gen(1, /*restart_count=*/1, /*max_restarts=*/3));
  follower.SetWorkersCanPause(true);
  follower.OnWaiting();
  CHECK(Show(follower.OnWorkersPaused()) == Lines{"clear current"});
  REQUIRE(follower.state() == State::kPaused);
  REQUIRE_FALSE(follower.current());
  // No assignment is current: the report counts the last one's restarts.
  CHECK(Show(follower.OnWorkersPausing({137, "rank 1 killed"})) ==
        Lines{"print failure report restart=1 of 3, will restart, in place"});
  CHECK(follower.state() == State::kPaused);
  // The daemon already heard the workers stopped; the next one rejoins them.
  CHECK(Show(follower.OnAssignment(Gen(2, 1, 3))) == Lines{"rejoin gen=2"});
}

TEST_CASE("a finished follower reports no failure", "[follower][in-place]") {
  auto follower = RunningGeneration(1);
  follower.OnSignal(SIGTERM);
  Settle(follower, Interrupted());
  REQUIRE(follower.state() == State::kFinished);
  CHECK(follower.OnWorkersPausing({137, "killed"}).empty());
}

TEST_CASE("a generation's workers are armed to pause as it, and re-armed once recovered",
          "[follower][in-place]") {
  ElasticFollower follower;
  rdzv::Assignment two_nodes = Gen(1);
  two_nodes.group_world_size = 2;
  const FollowerActions started = follower.OnAssignment(two_nodes);
  REQUIRE(started.size() == 1);
  const ArmInPlace& armed = std::get<StartWorkers>(started.front()).in_place;
  CHECK(armed.generation == 1);
  CHECK(armed.allowed);  // the daemon keeps the restart count
  CHECK(armed.hangs_elsewhere);
  follower.OnWorkersPausing({137, "killed"});
  follower.OnWorkersPaused();
  rdzv::Assignment next = Gen(2);
  follower.OnAssignment(next);
  const FollowerActions rearmed = follower.OnRecoveryEnded(/*recovered=*/true);
  REQUIRE(rearmed.size() == 1);
  CHECK(std::get<ArmInPlace>(rearmed.front()).generation == 2);
  CHECK_FALSE(std::get<ArmInPlace>(rearmed.front()).hangs_elsewhere);
  CHECK(follower.OnRecoveryEnded(/*recovered=*/false).empty());
}

}  // namespace
}  // namespace muster
