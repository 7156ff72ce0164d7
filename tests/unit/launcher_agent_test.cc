// Agent: whole runs of one node's agent with no process, over loopback only. A
// FakeSpawner plays the workers (launcher_agent_test_support.h: each one
// says hello, exits, answers pause and join as its script says) and a fake
// rendezvous link plays the daemon; the agent's own io_context carries every
// event, as in production. Each test checks what the workers were started
// with (TORCHELASTIC_RESTART_COUNT, WORLD_SIZE), the failure reports
// printed, and muster's exit code.
#include <algorithm>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <csignal>
#include <string>
#include <utility>
#include <vector>

#include "tests/unit/launcher_agent_test_support.h"

namespace muster {
namespace {

using testing::AgentRun;
using testing::FakeRendezvous;
using testing::WorkerScript;
using Lines = std::vector<std::string>;

constexpr int kFailed = 3;

// Each failure report as "restart N of M" and ", in place".
Lines Show(const std::vector<ReportFailureLocally>& reports) {
  Lines lines;
  for (const auto& r : reports) {
    lines.push_back("restart " + std::to_string(r.restart_count) + " of " +
                    std::to_string(r.max_restarts) + (r.in_place ? ", in place" : ""));
  }
  return lines;
}

bool Signalled(const AgentRun& run, pid_t pid, int sig) {
  return std::count(run.spawner.signals.begin(), run.spawner.signals.end(),
                    std::make_pair(pid, sig)) > 0;
}

// --- static mode --------------------------------------------------------------

TEST_CASE("a static run restarts failed workers within max-restarts then succeeds",
          "[agent][static]") {
  AgentRun run(/*nproc=*/2, /*max_restarts=*/2);
  run.options.recovery = LaunchOptions::Recovery::kRestart;
  // Local rank 1 fails in attempts 0 and 1; attempt 2 succeeds.
  run.script = [](int attempt, int local_rank) {
    return WorkerScript{.exit_code = (local_rank == 1 && attempt < 2) ? kFailed : 0};
  };
  CHECK(run.RunStatic() == 0);
  CHECK(run.Started() == Lines{"attempt=0 rank=0", "attempt=0 rank=1", "attempt=1 rank=0",
                               "attempt=1 rank=1", "attempt=2 rank=0", "attempt=2 rank=1"});
}

TEST_CASE("a static run gives up after max-restarts with the root cause's exit code",
          "[agent][static]") {
  AgentRun run(/*nproc=*/2, /*max_restarts=*/1);
  run.options.recovery = LaunchOptions::Recovery::kRestart;
  run.script = [](int /*attempt*/, int local_rank) {
    return WorkerScript{.exit_code = local_rank == 0 ? kFailed : std::optional<int>()};
  };
  CHECK(run.RunStatic() == kFailed);
  // The survivor of each attempt was stopped with SIGTERM.
  CHECK(run.Started() ==
        Lines{"attempt=0 rank=0", "attempt=0 rank=1", "attempt=1 rank=0", "attempt=1 rank=1"});
  // The survivor of each attempt (rank 1) was stopped with SIGTERM; the
  // failed worker was not.
  CHECK(Signalled(run, AgentRun::PidOfSpawn(1), SIGTERM));
  CHECK(Signalled(run, AgentRun::PidOfSpawn(3), SIGTERM));
  CHECK_FALSE(Signalled(run, AgentRun::PidOfSpawn(0), SIGTERM));
  CHECK_FALSE(Signalled(run, AgentRun::PidOfSpawn(2), SIGTERM));
  CHECK(Show(run.reports) == Lines{"restart 0 of 1", "restart 1 of 1"});
}

TEST_CASE("a signal stops the workers and muster exits 128+signal", "[agent][static]") {
  AgentRun run(/*nproc=*/2, /*max_restarts=*/3);
  run.options.recovery = LaunchOptions::Recovery::kRestart;
  run.handled_signals = {SIGUSR2};
  run.script = [](int /*attempt*/, int /*local_rank*/) { return WorkerScript{}; };
  run.on_all_started = [&](int /*attempt*/) {
    boost::asio::post(run.io, [] { std::raise(SIGUSR2); });
  };
  CHECK(run.RunStatic() == 128 + SIGUSR2);
  // Each worker got the signal muster got; none restarted.
  CHECK(Signalled(run, AgentRun::PidOfSpawn(0), SIGUSR2));
  CHECK(Signalled(run, AgentRun::PidOfSpawn(1), SIGUSR2));
  CHECK(run.Started() == Lines{"attempt=0 rank=0", "attempt=0 rank=1"});
  CHECK(run.reports.empty());
}

TEST_CASE("a worker that cannot be started ends the run 127", "[agent][static]") {
  AgentRun run(/*nproc=*/2, /*max_restarts=*/3);
  run.options.recovery = LaunchOptions::Recovery::kRestart;
  run.script = [](int /*attempt*/, int /*local_rank*/) { return WorkerScript{}; };
  SECTION("the first worker") {
    run.spawner.fail_at_spawn = 0;
    CHECK(run.RunStatic() == 127);
    CHECK(run.Started().empty());
  }
  SECTION("the second: the first is stopped before muster exits") {
    run.spawner.fail_at_spawn = 1;
    CHECK(run.RunStatic() == 127);
    CHECK(run.Started() == Lines{"attempt=0 rank=0"});
    CHECK(Signalled(run, AgentRun::PidOfSpawn(0), SIGTERM));
  }
  // Not a worker's failure: no report, and no restart.
  CHECK(run.reports.empty());
}

TEST_CASE("a failed worker is recovered in place: only its rank starts again as the next attempt",
          "[agent][static][in-place]") {
  AgentRun run(/*nproc=*/2, /*max_restarts=*/3);
  // Both workers announce in-place recovery; rank 1 of attempt 0 dies.
  run.script = [](int attempt, int local_rank) {
    return WorkerScript{
        .in_place = true,
        .exit_code = (attempt == 0 && local_rank == 1) ? kFailed : std::optional<int>()};
  };
  CHECK(run.RunStatic() == 0);
  CHECK(run.Started() == Lines{"attempt=0 rank=0", "attempt=0 rank=1", "attempt=1 rank=1"});
  CHECK(Show(run.reports) == Lines{"restart 0 of 3, in place"});
  // The survivor paused out of attempt 0 and joined attempt 1's store namespace.
  const Lines control = run.ControlLines();
  REQUIRE(control.size() == 2);
  CHECK(control[0] == "pause 0");
  CHECK(control[1].starts_with(
      "join 1 RANK=0 WORLD_SIZE=2 GROUP_RANK=0 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT="));
  CHECK(control[1].ends_with(" STORE_PREFIX=muster/1/"));
}

TEST_CASE("a recovery in place that falls back restarts every worker as the next attempt",
          "[agent][static][in-place]") {
  AgentRun run(/*nproc=*/2, /*max_restarts=*/3);
  // Rank 0 cannot pause; rank 1 of attempt 0 dies. Attempt 1 succeeds.
  run.script = [](int attempt, int local_rank) {
    if (attempt > 0) return WorkerScript{.in_place = true, .exit_code = 0};
    return WorkerScript{.in_place = true,
                        .exit_code = local_rank == 1 ? kFailed : std::optional<int>(),
                        .refuses_pause = true};
  };
  CHECK(run.RunStatic() == 0);
  // The replacement started early for attempt 1 is stopped with the
  // survivor; the restart that follows is attempt 1 again, every rank.
  CHECK(run.Started() == Lines{"attempt=0 rank=0", "attempt=0 rank=1", "attempt=1 rank=1",
                               "attempt=1 rank=0", "attempt=1 rank=1"});
}

TEST_CASE("no recovery in place is tried with no restart left", "[agent][static][in-place]") {
  AgentRun run(/*nproc=*/2, /*max_restarts=*/0);
  run.script = [](int /*attempt*/, int local_rank) {
    return WorkerScript{.in_place = true,
                        .exit_code = local_rank == 1 ? kFailed : std::optional<int>()};
  };
  CHECK(run.RunStatic() == kFailed);
  CHECK(run.Started() == Lines{"attempt=0 rank=0", "attempt=0 rank=1"});
  CHECK(run.ControlLines().empty());
  CHECK(Show(run.reports) == Lines{"restart 0 of 0"});
}

// --- elastic mode -------------------------------------------------------------

TEST_CASE("an elastic node follows a membership change into the next generation",
          "[agent][elastic]") {
  AgentRun run(/*nproc=*/2, /*max_restarts=*/3);
  FakeRendezvous rendezvous(run.io);
  // Generation 1 runs until stopped; generation 2's workers succeed.
  run.script = [](int attempt, int /*local_rank*/) {
    return WorkerScript{.exit_code = attempt == 0 ? std::optional<int>() : 0};
  };
  rendezvous.on_start = [&] { rendezvous.Assign(/*generation=*/1, /*nodes=*/1); };
  // Once generation 1's workers run, a second node joins.
  run.on_all_started = [&](int attempt) {
    if (attempt != 0) return;
    rendezvous.Waiting("a node joined");
    rendezvous.Assign(/*generation=*/2, /*nodes=*/2);
  };
  rendezvous.on_succeeded = [&](uint64_t) { rendezvous.EndRun(/*succeeded=*/true); };
  CHECK(run.RunElastic(rendezvous) == 0);
  CHECK(run.Started() ==
        Lines{"attempt=0 rank=0", "attempt=0 rank=1", "attempt=1 rank=0", "attempt=1 rank=1"});
  CHECK(run.WorldSizes() == std::vector<std::string>{"2", "2", "4", "4"});
  CHECK(rendezvous.join.local_world_size == 2);
  CHECK(rendezvous.join.max_restarts == 3);
  CHECK(rendezvous.calls == Lines{"start", "current gen=1", "current none", "current gen=2",
                                  "succeeded gen=2", "stop"});
}

TEST_CASE("an elastic node pauses workers that can and rejoins them into the next generation",
          "[agent][elastic][in-place]") {
  AgentRun run(/*nproc=*/2, /*max_restarts=*/3);
  FakeRendezvous rendezvous(run.io);
  run.script = [](int /*attempt*/, int /*local_rank*/) { return WorkerScript{.in_place = true}; };
  rendezvous.on_start = [&] { rendezvous.Assign(1, 1); };
  run.on_all_started = [&](int attempt) {
    if (attempt != 0) return;
    rendezvous.Waiting("a node joined");
    rendezvous.Assign(2, 2);
  };
  rendezvous.on_succeeded = [&](uint64_t) { rendezvous.EndRun(true); };
  CHECK(run.RunElastic(rendezvous) == 0);
  CHECK(run.Started() == Lines{"attempt=0 rank=0", "attempt=0 rank=1"});
  const Lines control = run.ControlLines();
  REQUIRE(control.size() == 4);
  CHECK(control[0] == "pause 1");
  CHECK(control[2].starts_with("join 2 RANK=0 WORLD_SIZE=4 "));
  CHECK(control[2].ends_with(" STORE_PREFIX=muster/1/"));
  CHECK(rendezvous.calls == Lines{"start", "current gen=1", "current none", "current gen=2",
                                  "succeeded gen=2", "stop"});
}

TEST_CASE("an elastic node's heartbeats carry the step of its slowest worker",
          "[agent][elastic][progress]") {
  AgentRun run(/*nproc=*/2, /*max_restarts=*/0);
  FakeRendezvous rendezvous(run.io);
  run.script = [](int /*attempt*/, int /*local_rank*/) { return WorkerScript{}; };
  rendezvous.on_start = [&] { rendezvous.Assign(1, 1); };
  run.on_all_started = [&](int /*attempt*/) {
    run.WriteProgress(0, 0, "5\n");
    run.WriteProgress(0, 1, "3\n");
    run.WriteProgress(0, 0, "inject 0\n9\n");  // the newest step of the read counts
    run.WriteProgress(0, 1, "12\n");
    run.WriteProgress(0, 1, "inject 1\n");  // no step: nothing new to say
    run.ExitWorker(0, 0, 0);
    run.ExitWorker(0, 1, 0);
  };
  rendezvous.on_succeeded = [&](uint64_t) { rendezvous.EndRun(true); };
  CHECK(run.RunElastic(rendezvous) == 0);
  CHECK(rendezvous.progress == std::vector<uint64_t>{5, 3, 3, 9});
}

TEST_CASE("a step line split across two reads is read whole", "[agent][elastic][progress]") {
  AgentRun run(/*nproc=*/1, /*max_restarts=*/0);
  FakeRendezvous rendezvous(run.io, 1);
  run.script = [](int /*attempt*/, int /*local_rank*/) { return WorkerScript{}; };
  rendezvous.on_start = [&] { rendezvous.Assign(1, 1); };
  run.on_all_started = [&](int /*attempt*/) {
    run.WriteProgress(0, 0, "122 18000\n123 4");  // the step hooks' lines, cut mid-line
    run.WriteProgress(0, 0, "5\n");
    run.ExitWorker(0, 0, 0);
  };
  rendezvous.on_succeeded = [&](uint64_t) { rendezvous.EndRun(true); };
  CHECK(run.RunElastic(rendezvous) == 0);
  CHECK(rendezvous.progress == std::vector<uint64_t>{122, 123});  // never 5
}

TEST_CASE("an elastic node whose workers report nothing sends no step", "[agent][elastic]") {
  AgentRun run(/*nproc=*/1, /*max_restarts=*/0);
  FakeRendezvous rendezvous(run.io, 1);
  run.script = [](int /*attempt*/, int /*local_rank*/) { return WorkerScript{.exit_code = 0}; };
  rendezvous.on_start = [&] { rendezvous.Assign(1, 1); };
  rendezvous.on_succeeded = [&](uint64_t) { rendezvous.EndRun(true); };
  CHECK(run.RunElastic(rendezvous) == 0);
  CHECK(rendezvous.progress.empty());
}

TEST_CASE("an elastic node whose workers fail reports the failure to the daemon",
          "[agent][elastic]") {
  AgentRun run(/*nproc=*/1, /*max_restarts=*/3);
  run.options.recovery = LaunchOptions::Recovery::kRestart;
  FakeRendezvous rendezvous(run.io, /*local_world_size=*/1);
  run.script = [](int /*attempt*/, int /*local_rank*/) { return WorkerScript{.exit_code = 7}; };
  rendezvous.on_start = [&] { rendezvous.Assign(1, 1); };
  rendezvous.on_failure = [&](uint64_t) { rendezvous.EndRun(false); };
  CHECK(run.RunElastic(rendezvous) == 7);
  CHECK(rendezvous.calls ==
        Lines{"start", "current gen=1", "failure gen=1 code=7", "current none", "stop"});
}

TEST_CASE("a worker that dies while paused between generations is reported and started again",
          "[agent][elastic][in-place]") {
  AgentRun run(/*nproc=*/2, /*max_restarts=*/3);
  FakeRendezvous rendezvous(run.io);
  run.script = [](int /*attempt*/, int /*local_rank*/) { return WorkerScript{.in_place = true}; };
  rendezvous.on_start = [&] { rendezvous.Assign(1, 1); };
  run.on_all_started = [&](int attempt) {
    if (attempt == 0) rendezvous.Waiting("a node joined");
  };
  // Once both workers paused (the client hears none runs here), rank 1
  // dies; then generation 2 is assigned.
  bool died = false;
  rendezvous.on_cleared = [&] {
    if (std::exchange(died, true)) return;
    run.ExitWorker(/*attempt=*/0, /*local_rank=*/1, kFailed);
    rendezvous.Assign(2, 1);
  };
  rendezvous.on_succeeded = [&](uint64_t) { rendezvous.EndRun(true); };
  CHECK(run.RunElastic(rendezvous) == 0);
  // Its failure report was printed (and its failure kept as this node's
  // root cause), counted against generation 1's restarts.
  CHECK(Show(run.reports) == Lines{"restart 0 of 3, in place"});
  // The survivor rejoined generation 2; the dead rank started again in it.
  CHECK(run.Started() == Lines{"attempt=0 rank=0", "attempt=0 rank=1", "attempt=1 rank=1"});
  CHECK(rendezvous.calls == Lines{"start", "current gen=1", "current none", "current gen=2",
                                  "succeeded gen=2", "stop"});
}

}  // namespace
}  // namespace muster
