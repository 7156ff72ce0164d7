// WorkerGroup's in-place recovery (worker_group.h): who is paused, when the
// survivors may rejoin, what they are told, and every way it falls back to
// stopping the workers (fake spawner, fake time).
#include <catch2/catch.hpp>
#include <csignal>

#include "launcher/process/worker_group.h"
#include "tests/unit/launcher_fake_spawner.h"
#include "tests/unit/launcher_worker_group_test_support.h"

using namespace muster;
using namespace std::chrono_literals;

namespace {

using muster::testing::FakeSpawner;
using muster::testing::Specs;
using muster::testing::t0;
using muster::testing::TickJudged;
using muster::testing::w0;

constexpr uint64_t kGeneration = 4;

control::Hello InPlaceHello() { return control::Hello{1, {"in-place"}}; }

// A group of `n` workers that all said they recover in place.
struct InPlaceGroup {
  explicit InPlaceGroup(int n, bool allowed = true) {
    group.EnableInPlace({.generation = kGeneration, .timeout = 2s}, allowed);
    REQUIRE(group.Start(Specs(n), t0).ok());
    for (int i = 0; i < n; ++i) group.OnControl(group.TagFor(i), InPlaceHello(), t0);
  }
  // The control lines sent to local rank `lr`'s current process.
  std::vector<std::string> LinesTo(int lr) const {
    std::vector<std::string> lines;
    for (const auto& [tag, line] : spawner.control) {
      if (tag == group.TagFor(lr)) lines.push_back(line);
    }
    return lines;
  }
  void ReadyAll(const std::vector<int>& survivors) {
    for (int lr : survivors) group.OnControl(group.TagFor(lr), control::Ready{kGeneration}, t0);
  }
  // Their joins to `generation`.
  std::vector<WorkerGroup::Rejoining> Joins(const std::vector<int>& survivors,
                                            uint64_t generation = kGeneration + 1) const {
    std::vector<WorkerGroup::Rejoining> joins;
    for (int lr : survivors) {
      control::Join join;
      join.generation = generation;
      join.rank = 10 + lr;
      join.world_size = 4;
      join.local_rank = lr;
      join.master_addr = "127.0.0.1";
      join.master_port = 29500;
      join.store_prefix = "muster/5/";
      joins.push_back({.local_rank = lr, .join = join});
    }
    return joins;
  }
  std::vector<WorkerSpec> Replacement(int lr) const {
    auto specs = Specs(lr + 1);
    WorkerSpec spec = specs[static_cast<size_t>(lr)];
    spec.request.tag = WorkerGroup::MakeTag(5, lr);
    return {spec};
  }

  FakeSpawner spawner;
  WorkerGroup group{spawner, 0, 30s, 10s};
};

}  // namespace

TEST_CASE("a worker that does not answer the pause while others do is killed, the rest go on",
          "[group][in-place]") {
  InPlaceGroup g(3);
  g.group.OnExit(g.group.TagFor(2), ExitStatus::Killed(SIGKILL), t0, w0);
  g.group.OnControl(g.group.TagFor(0), control::Ready{kGeneration}, t0);
  TickJudged(g.group, t0 + 2s, w0);
  CHECK(g.group.state() == WorkerGroup::State::kRecovering);
  CHECK(g.spawner.signals == std::vector<std::pair<pid_t, int>>{{1001, SIGKILL}});
  CHECK(g.group.failures().size() == 2);
  CHECK(g.group.failed_local_ranks() == std::vector<int>{2, 1});
  g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0 + 2s, w0);
  CHECK(g.group.ready_to_join());
  CHECK(g.group.paused_local_ranks() == std::vector<int>{0});
}

TEST_CASE("a failed worker's peers are paused, not stopped, when all recover in place",
          "[group][in-place]") {
  InPlaceGroup g(4);
  g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0 + 1s, w0);
  CHECK(g.group.state() == WorkerGroup::State::kRecovering);
  CHECK(g.spawner.signals.empty());
  for (int lr : {0, 2, 3}) CHECK(g.LinesTo(lr) == std::vector<std::string>{"pause 4\n"});
  CHECK(g.group.failed_local_ranks() == std::vector<int>{1});
  CHECK(g.group.failures().size() == 1);
  CHECK(g.group.deadline() == t0 + 3s);  // the pause's bound
  CHECK_FALSE(g.group.finished());
}

TEST_CASE("survivors rejoin once all paused, only the failed rank is spawned again",
          "[group][in-place]") {
  InPlaceGroup g(4);
  g.group.OnExit(g.group.TagFor(1), ExitStatus::Exited(75), t0 + 1s, w0);
  g.group.OnControl(g.group.TagFor(0), control::Ready{kGeneration}, t0);
  g.group.OnControl(g.group.TagFor(2), control::Ready{kGeneration}, t0);
  CHECK_FALSE(g.group.ready_to_join());
  // A ready for another generation is not this pause's answer.
  g.group.OnControl(g.group.TagFor(3), control::Ready{kGeneration + 7}, t0);
  CHECK_FALSE(g.group.ready_to_join());
  g.group.OnControl(g.group.TagFor(3), control::Ready{kGeneration}, t0);
  REQUIRE(g.group.ready_to_join());
  CHECK_FALSE(g.group.deadline());  // paused: no bound until the rejoin

  REQUIRE(g.group.Rejoin(g.Joins({0, 2, 3}), g.Replacement(1), t0 + 2s).ok());
  CHECK(g.spawner.spawned.size() == 5);  // four at the start, one replacement
  CHECK(g.spawner.spawned.back().tag == WorkerGroup::MakeTag(5, 1));
  CHECK(g.group.TagFor(1) == WorkerGroup::MakeTag(5, 1));
  CHECK(g.LinesTo(2).back() ==
        "join 5 RANK=12 WORLD_SIZE=4 GROUP_RANK=0 LOCAL_RANK=2 MASTER_ADDR=127.0.0.1 "
        "MASTER_PORT=29500 STORE_PREFIX=muster/5/\n");
  CHECK(g.group.state() == WorkerGroup::State::kRecovering);
  CHECK(g.group.deadline() == t0 + 4s);  // the join's bound

  for (int lr : {0, 2}) g.group.OnControl(g.group.TagFor(lr), control::Joined{5}, t0 + 3s);
  CHECK(g.group.state() == WorkerGroup::State::kRecovering);
  g.group.OnControl(g.group.TagFor(3), control::Joined{5}, t0 + 3s);
  CHECK(g.group.state() == WorkerGroup::State::kRunning);
  CHECK(g.group.recoveries() == 1);
  CHECK(g.group.failures().empty());  // handled: a later failure is the next root cause
  CHECK(g.spawner.signals.empty());

  // The old process's late events are not the replacement's.
  g.group.OnExit(WorkerGroup::MakeTag(0, 1), ExitStatus::Exited(1), t0 + 4s, w0);
  CHECK(g.group.state() == WorkerGroup::State::kRunning);
}

TEST_CASE("the survivors' hang clocks restart when they rejoin", "[group][in-place]") {
  InPlaceGroup g(2);
  CHECK(g.group.OnProgress(g.group.TagFor(0), 3, t0));
  g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
  g.ReadyAll({0});
  REQUIRE(g.group.Rejoin(g.Joins({0}), g.Replacement(1), t0 + 1s).ok());
  g.group.OnControl(g.group.TagFor(0), control::Joined{5}, t0 + 9s);
  REQUIRE(g.group.state() == WorkerGroup::State::kRunning);
  // Silent since t0 + 9s, not since its last step at t0: not hung at t0 + 12s.
  TickJudged(g.group, t0 + 12s, w0);
  CHECK(g.group.state() == WorkerGroup::State::kRunning);
  TickJudged(g.group, t0 + 19s, w0);
  CHECK(g.group.state() == WorkerGroup::State::kStopping);
}

TEST_CASE("under the learned hang rule, a recovery's time is not learned as a step",
          "[group][in-place]") {
  InPlaceGroup g(2);
  g.group.EnableAutoHang(AutoHangRule{});
  Time t = t0;
  for (int step = 1; step <= 20; ++step) {
    t += 100ms;
    for (int lr : {0, 1}) g.group.OnProgress(g.group.TagFor(lr), step, t);
  }
  g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t, w0);
  g.ReadyAll({0});
  REQUIRE(g.group.Rejoin(g.Joins({0}), g.Replacement(1), t + 1s).ok());
  g.group.OnControl(g.group.TagFor(0), control::Joined{5}, t + 22s);
  g.group.OnControl(g.group.TagFor(1), control::Joined{5}, t + 22s);
  REQUIRE(g.group.state() == WorkerGroup::State::kRunning);
  // The survivor's first step after 22 s of recovery, then 100 ms steps:
  // still the rule's floor (20 s), not 2 x 22 s.
  const Time resumed = t + 22s + 100ms;
  g.group.OnProgress(g.group.TagFor(0), 21, resumed);
  g.group.OnProgress(g.group.TagFor(0), 22, resumed + 100ms);
  REQUIRE(g.group.deadline());
  CHECK(*g.group.deadline() <= resumed + 100ms + 20s);
}

TEST_CASE("a group restarts every worker as before when any cannot recover in place",
          "[group][in-place]") {
  SECTION("one never said hello") {
    FakeSpawner spawner;
    WorkerGroup group(spawner, 0, 30s);
    group.EnableInPlace({.generation = 0, .timeout = 2s}, true);
    REQUIRE(group.Start(Specs(3), t0).ok());
    group.OnControl(group.TagFor(0), InPlaceHello(), t0);
    group.OnControl(group.TagFor(1), InPlaceHello(), t0);
    group.OnExit(group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
    CHECK(group.state() == WorkerGroup::State::kStopping);
    CHECK(spawner.control.empty());
  }
  SECTION("one said hello without the capability, or a version this build does not know") {
    FakeSpawner spawner;
    WorkerGroup group(spawner, 0, 30s);
    group.EnableInPlace({.generation = 0, .timeout = 2s}, true);
    REQUIRE(group.Start(Specs(2), t0).ok());
    group.OnControl(group.TagFor(0), control::Hello{1, {"other"}}, t0);
    group.OnControl(group.TagFor(1), control::Hello{0, {"in-place"}}, t0);
    group.OnExit(group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
    CHECK(group.state() == WorkerGroup::State::kStopping);
  }
  SECTION("no restart is left") {
    InPlaceGroup g(2, /*allowed=*/false);
    g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
    CHECK(g.group.state() == WorkerGroup::State::kStopping);
  }
  SECTION("a worker already finished: it cannot rejoin") {
    InPlaceGroup g(3);
    g.group.OnExit(g.group.TagFor(0), ExitStatus::Exited(0), t0, w0);
    g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
    CHECK(g.group.state() == WorkerGroup::State::kStopping);
  }
  SECTION("in-place recovery was never enabled") {
    FakeSpawner spawner;
    WorkerGroup group(spawner, 0, 30s);
    REQUIRE(group.Start(Specs(2), t0).ok());
    for (int i = 0; i < 2; ++i) group.OnControl(group.TagFor(i), InPlaceHello(), t0);
    group.OnExit(group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
    CHECK(group.state() == WorkerGroup::State::kStopping);
  }
}

TEST_CASE("a recovery that cannot go on kills the silent, stops the rest and fails the attempt",
          "[group][in-place]") {
  SECTION("no worker answers the pause in time") {
    InPlaceGroup g(3);
    g.group.OnExit(g.group.TagFor(2), ExitStatus::Killed(SIGKILL), t0, w0);
    TickJudged(g.group, t0 + 1s, w0);
    CHECK(g.group.state() == WorkerGroup::State::kRecovering);
    TickJudged(g.group, t0 + 2s, w0);
    CHECK(g.group.state() == WorkerGroup::State::kStopping);
    CHECK(g.group.fallback_reason() == "a worker did not answer within the recovery timeout");
    for (const pid_t silent : {1000, 1001}) {
      CHECK(std::count(g.spawner.signals.begin(), g.spawner.signals.end(),
                       std::make_pair(silent, SIGKILL)) == 1);
    }
    g.group.OnExit(g.group.TagFor(0), ExitStatus::Killed(SIGKILL), t0 + 2s, w0);
    g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0 + 2s, w0);
    CHECK(g.group.state() == WorkerGroup::State::kFailed);
    REQUIRE(g.group.failures().size() == 1);  // the original failure stays the root cause
    CHECK(g.group.failures().front().local_rank == 2);
  }
  SECTION("a worker does not answer the join in time") {
    InPlaceGroup g(2);
    g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
    g.ReadyAll({0});
    REQUIRE(g.group.Rejoin(g.Joins({0}), g.Replacement(1), t0).ok());
    TickJudged(g.group, t0 + 2s, w0);
    CHECK(g.group.state() == WorkerGroup::State::kStopping);
    CHECK(std::count(g.spawner.signals.begin(), g.spawner.signals.end(),
                     std::make_pair(pid_t{1000}, SIGKILL)) == 1);
  }
  SECTION("a worker answers failed") {
    InPlaceGroup g(2);
    g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
    g.ReadyAll({0});
    REQUIRE(g.group.Rejoin(g.Joins({0}), g.Replacement(1), t0).ok());
    g.group.OnControl(g.group.TagFor(0), control::Failed{5, "store unreachable"}, t0);
    CHECK(g.group.state() == WorkerGroup::State::kStopping);
    CHECK(g.group.fallback_reason() == "rank 10 could not recover in place: store unreachable");
  }
  SECTION("the pause cannot be sent") {
    InPlaceGroup g(2);
    g.spawner.fail_control = true;
    g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
    CHECK(g.group.state() == WorkerGroup::State::kStopping);
    CHECK_THAT(g.group.fallback_reason(), Catch::Contains("cannot tell rank 10"));
  }
  SECTION("the replacement cannot be spawned") {
    InPlaceGroup g(2);
    g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
    g.ReadyAll({0});
    g.spawner.fail_at_spawn = 2;
    CHECK_FALSE(g.group.Rejoin(g.Joins({0}), g.Replacement(1), t0).ok());
    CHECK(g.group.state() == WorkerGroup::State::kStopping);
    CHECK_THAT(g.group.fallback_reason(), Catch::Contains("cannot start rank 11 again"));
  }
  SECTION("a worker exits during the join") {
    InPlaceGroup g(3);
    g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
    g.ReadyAll({0, 2});
    REQUIRE(g.group.Rejoin(g.Joins({0, 2}), g.Replacement(1), t0).ok());
    g.group.OnExit(g.group.TagFor(2), ExitStatus::Exited(75), t0, w0);
    CHECK(g.group.state() == WorkerGroup::State::kStopping);
    CHECK(g.group.fallback_reason() == "rank 12 exited during the join");
  }
  SECTION("muster is signalled: the recovery ends as an interruption") {
    InPlaceGroup g(2);
    g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
    g.group.Stop(SIGINT, t0);
    g.group.OnExit(g.group.TagFor(0), ExitStatus::Killed(SIGINT), t0, w0);
    CHECK(g.group.state() == WorkerGroup::State::kInterrupted);
  }
}

TEST_CASE("a second worker that dies while the others pause is started again too",
          "[group][in-place]") {
  InPlaceGroup g(4);
  g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
  g.group.OnExit(g.group.TagFor(3), ExitStatus::Exited(75), t0, w0);
  CHECK(g.group.failed_local_ranks() == std::vector<int>{1, 3});
  g.ReadyAll({0, 2});
  REQUIRE(g.group.ready_to_join());
  std::vector<WorkerSpec> replacements = g.Replacement(1);
  replacements.push_back(g.Replacement(3).front());
  REQUIRE(g.group.Rejoin(g.Joins({0, 2}), replacements, t0).ok());
  CHECK(g.spawner.spawned.size() == 6);
  g.ReadyAll({});
  for (int lr : {0, 2}) g.group.OnControl(g.group.TagFor(lr), control::Joined{5}, t0);
  CHECK(g.group.state() == WorkerGroup::State::kRunning);
}

TEST_CASE("every worker gone during a recovery fails the attempt", "[group][in-place]") {
  InPlaceGroup g(2);
  g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
  g.group.OnExit(g.group.TagFor(0), ExitStatus::Killed(SIGSEGV), t0, w0);
  CHECK(g.group.state() == WorkerGroup::State::kFailed);
  CHECK(g.group.failures().size() == 2);
  CHECK(g.group.fallback_reason() == "every worker exited during the recovery");
}

TEST_CASE("replacements started early run while the survivors pause, and are not paused",
          "[group][in-place]") {
  InPlaceGroup g(3);
  g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
  REQUIRE(g.group.StartReplacements(g.Replacement(1), t0).ok());
  CHECK(g.spawner.spawned.size() == 4);
  CHECK(g.group.failed_local_ranks().empty());  // nothing left to start at the rejoin
  CHECK(g.LinesTo(1).empty());                  // the new process gets no pause
  g.ReadyAll({0});
  CHECK_FALSE(g.group.ready_to_join());
  g.ReadyAll({2});
  REQUIRE(g.group.ready_to_join());
  CHECK(g.group.paused_local_ranks() == std::vector<int>{0, 2});
  REQUIRE(g.group.Rejoin(g.Joins({0, 2}), {}, t0).ok());
  CHECK(g.spawner.spawned.size() == 4);
  CHECK(g.LinesTo(1).empty());  // nor a join: it starts in the new attempt
  for (int lr : {0, 2}) g.group.OnControl(g.group.TagFor(lr), control::Joined{5}, t0);
  CHECK(g.group.state() == WorkerGroup::State::kRunning);
}

TEST_CASE("a replacement started early that exits falls back", "[group][in-place]") {
  InPlaceGroup g(2);
  g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
  REQUIRE(g.group.StartReplacements(g.Replacement(1), t0).ok());
  g.group.OnExit(g.group.TagFor(1), ExitStatus::Exited(2), t0, w0);
  CHECK(g.group.state() == WorkerGroup::State::kStopping);
  CHECK(g.group.fallback_reason() == "rank 11 exited during the join");
}

TEST_CASE(
    "a generation that ends during the join pauses every worker again: they keep their "
    "processes and join the next",
    "[group][in-place]") {
  InPlaceGroup g(3);
  g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
  g.ReadyAll({0, 2});
  REQUIRE(g.group.Rejoin(g.Joins({0, 2}), g.Replacement(1), t0 + 1s).ok());
  g.group.OnControl(g.group.TagFor(1), InPlaceHello(), t0 + 1s);
  g.group.OnControl(g.group.TagFor(0), control::Joined{5}, t0 + 1s);
  // Generation 5 ends (a node elsewhere died) before rank 12 joined it.
  REQUIRE(g.group.CanPauseAll());
  REQUIRE(g.group.PauseAll(t0 + 2s));
  CHECK(g.group.state() == WorkerGroup::State::kRecovering);
  // Each leaves the generation it was joining, the replacement started for it too.
  for (int lr : {0, 1, 2}) CHECK(g.LinesTo(lr).back() == "pause 5\n");
  CHECK(g.group.deadline() == t0 + 4s);  // the pause's bound again
  // A join that completes as the pause is sent is no answer to it.
  g.group.OnControl(g.group.TagFor(2), control::Joined{5}, t0 + 2s);
  CHECK(g.group.state() == WorkerGroup::State::kRecovering);
  for (int lr : {0, 1, 2}) g.group.OnControl(g.group.TagFor(lr), control::Ready{5}, t0 + 2s);
  REQUIRE(g.group.ready_to_join());
  CHECK(g.group.paused_local_ranks() == std::vector<int>{0, 1, 2});
  CHECK(g.group.failed_local_ranks().empty());

  REQUIRE(g.group.Rejoin(g.Joins({0, 1, 2}, 6), {}, t0 + 3s).ok());
  CHECK(g.LinesTo(1).back() ==
        "join 6 RANK=11 WORLD_SIZE=4 GROUP_RANK=0 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 "
        "MASTER_PORT=29500 STORE_PREFIX=muster/5/\n");
  for (int lr : {0, 1, 2}) g.group.OnControl(g.group.TagFor(lr), control::Joined{6}, t0 + 3s);
  CHECK(g.group.state() == WorkerGroup::State::kRunning);
  CHECK(g.group.recoveries() == 1);
  CHECK(g.spawner.spawned.size() == 4);  // three at the start, one replacement: no restart
  CHECK(g.spawner.signals.empty());
}

TEST_CASE("a worker lost while a join is paused again is the only one started again",
          "[group][in-place]") {
  InPlaceGroup g(2);
  // A generation ends elsewhere: both pause and are told to join the next.
  REQUIRE(g.group.PauseAll(t0));
  g.ReadyAll({0, 1});
  REQUIRE(g.group.Rejoin(g.Joins({0, 1}), {}, t0).ok());
  // That one ends too before they joined; rank 11 gives up on its join.
  REQUIRE(g.group.PauseAll(t0 + 1s));
  g.group.OnExit(g.group.TagFor(1), ExitStatus::Exited(75), t0 + 1s, w0);
  CHECK(g.group.state() == WorkerGroup::State::kRecovering);
  g.group.OnControl(g.group.TagFor(0), control::Ready{5}, t0 + 1s);
  REQUIRE(g.group.ready_to_join());
  CHECK(g.group.paused_local_ranks() == std::vector<int>{0});
  CHECK(g.group.failed_local_ranks() == std::vector<int>{1});
  REQUIRE(g.group.Rejoin(g.Joins({0}, 6), g.Replacement(1), t0 + 2s).ok());
  g.group.OnControl(g.group.TagFor(0), control::Joined{6}, t0 + 2s);
  CHECK(g.group.state() == WorkerGroup::State::kRunning);
  CHECK(g.spawner.spawned.size() == 3);
  CHECK(g.spawner.signals.empty());
}

TEST_CASE(
    "a join cannot be paused again while a process started for it does not speak the "
    "channel yet",
    "[group][in-place]") {
  InPlaceGroup g(2);
  g.group.OnExit(g.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0, w0);
  g.ReadyAll({0});
  REQUIRE(g.group.Rejoin(g.Joins({0}), g.Replacement(1), t0).ok());
  CHECK_FALSE(g.group.CanPauseAll());
  CHECK_FALSE(g.group.PauseAll(t0));
  CHECK(g.LinesTo(0).back().starts_with("join 5 "));
  g.group.OnControl(g.group.TagFor(1), InPlaceHello(), t0);
  CHECK(g.group.CanPauseAll());
}

// Three workers reporting progress; at t0 + 5s, rank 1 (local 1) is silent
// for the 5 s hang timeout and the others too (blocked in its collective).
struct HangingGroup {
  HangingGroup() {
    group.EnableInPlace({.generation = kGeneration, .timeout = 2s}, true);
    REQUIRE(group.Start(Specs(3), t0).ok());
    for (int i = 0; i < 3; ++i) {
      group.OnControl(group.TagFor(i), InPlaceHello(), t0);
      group.OnProgress(group.TagFor(i), 1, t0);
    }
  }
  FakeSpawner spawner;
  WorkerGroup group{spawner, 0, 30s, 5s};
};

TEST_CASE("a hang pauses every worker first, the one that cannot answer is killed as hung",
          "[group][in-place]") {
  HangingGroup h;
  TickJudged(h.group, t0 + 5s, w0);
  CHECK(h.group.state() == WorkerGroup::State::kRecovering);
  CHECK(h.spawner.signals.empty());                                // nobody killed yet
  CHECK(h.group.deadline() == t0 + 5s + WorkerGroup::kHangProbe);  // below the 2 s timeout
  // Ranks 0 and 2 were blocked in a collective with rank 1: the pause
  // interrupts them and they answer. Rank 1 is stuck.
  for (int i : {0, 2}) h.group.OnControl(h.group.TagFor(i), control::Ready{kGeneration}, t0 + 5s);
  CHECK_FALSE(h.group.ready_to_join());
  TickJudged(h.group, t0 + 6s, w0);
  CHECK(h.group.state() == WorkerGroup::State::kRecovering);
  CHECK(h.spawner.signals == std::vector<std::pair<pid_t, int>>{{1001, SIGKILL}});
  REQUIRE(h.group.failures().size() == 1);
  CHECK(h.group.failures().front().hung);
  CHECK(h.group.failures().front().local_rank == 1);
  CHECK(h.group.failed_local_ranks() == std::vector<int>{1});
  CHECK_FALSE(h.group.ready_to_join());  // not reaped yet
  h.group.OnExit(h.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0 + 6s, w0);
  CHECK(h.group.ready_to_join());
  CHECK(h.group.failures().size() == 1);  // its SIGKILL is not a second failure
  CHECK(h.group.paused_local_ranks() == std::vector<int>{0, 2});
}

TEST_CASE("a hang whose every worker answers the pause kills the silent one by the timeout's rule",
          "[group][in-place]") {
  HangingGroup h;
  h.group.OnProgress(h.group.TagFor(0), 2, t0 + 4s);
  h.group.OnProgress(h.group.TagFor(2), 2, t0 + 4s);
  TickJudged(h.group, t0 + 5s, w0);
  for (int i : {0, 1, 2}) {
    h.group.OnControl(h.group.TagFor(i), control::Ready{kGeneration}, t0 + 5s);
  }
  CHECK(h.spawner.signals == std::vector<std::pair<pid_t, int>>{{1001, SIGKILL}});
  REQUIRE(h.group.failures().size() == 1);
  CHECK(h.group.failures().front().hung);
  CHECK(h.group.failures().front().silent_for == 5s);
  CHECK_FALSE(h.group.ready_to_join());
  h.group.OnExit(h.group.TagFor(1), ExitStatus::Killed(SIGKILL), t0 + 5s, w0);
  CHECK(h.group.ready_to_join());
}

TEST_CASE("a hang probe that nobody answers falls back to the restart path", "[group][in-place]") {
  HangingGroup h;
  TickJudged(h.group, t0 + 5s, w0);
  TickJudged(h.group, t0 + 6s, w0);
  CHECK(h.group.state() == WorkerGroup::State::kStopping);
  CHECK(h.group.fallback_reason() == "a worker did not answer within the recovery timeout");
}

TEST_CASE("workers that all end successfully during a hang probe end the attempt in success",
          "[group][in-place]") {
  // Their last step reported, they tear down for longer than the hang
  // timeout (a large interpreter's exit) and exit 0 while being probed.
  HangingGroup h;
  TickJudged(h.group, t0 + 5s, w0);
  REQUIRE(h.group.state() == WorkerGroup::State::kRecovering);
  for (int i : {0, 1, 2}) h.group.OnExit(h.group.TagFor(i), ExitStatus::Exited(0), t0 + 5s, w0);
  CHECK(h.group.state() == WorkerGroup::State::kSucceeded);
  CHECK(h.group.failures().empty());
  CHECK(h.group.fallback_reason().empty());
}

TEST_CASE("a worker that closed its progress pipe is no longer watched for hangs",
          "[group][in-place]") {
  HangingGroup h;
  for (int i : {0, 1, 2}) h.group.OnProgressClosed(h.group.TagFor(i));
  CHECK_FALSE(h.group.deadline().has_value());
  TickJudged(h.group, t0 + 60s, w0);
  CHECK(h.group.state() == WorkerGroup::State::kRunning);
  CHECK(h.spawner.signals.empty());
}

TEST_CASE("the workers that never said hello are the reason a failure restarts",
          "[group][in-place]") {
  FakeSpawner spawner;
  WorkerGroup group{spawner, 0, 30s};
  group.EnableInPlace({.generation = kGeneration, .timeout = 2s}, true);
  REQUIRE(group.Start(Specs(3), t0).ok());
  group.OnControl(group.TagFor(1), InPlaceHello(), t0);
  CHECK(group.local_ranks_not_in_place() == std::vector<int>{0, 2});
  group.OnExit(group.TagFor(2), ExitStatus::Exited(1), t0, w0);
  CHECK(group.state() == WorkerGroup::State::kStopping);  // the restart path
}

TEST_CASE("a hang probe every worker answers on a node of several kills nobody and waits",
          "[group][in-place]") {
  // Another node's worker hangs: these block in collectives with it, go
  // silent together, and all answer the probe's pause.
  InPlaceGroup g(3);
  g.group.EnableInPlace({.generation = kGeneration, .timeout = 2s, .hangs_elsewhere = true}, true);
  for (int i = 0; i < 3; ++i) g.group.OnProgress(g.group.TagFor(i), 1, t0);
  TickJudged(g.group, t0 + 10s, w0);
  REQUIRE(g.group.state() == WorkerGroup::State::kRecovering);
  for (int lr : {0, 1, 2}) {
    g.group.OnControl(g.group.TagFor(lr), control::Ready{kGeneration}, t0 + 10s);
  }
  CHECK(g.spawner.signals.empty());
  CHECK(g.group.failures().empty());
  CHECK(g.group.ready_to_join());
  CHECK(g.group.deadline() == t0 + 12s);
  SECTION("the next generation rejoins them all") {
    REQUIRE(g.group.Rejoin(g.Joins({0, 1, 2}), {}, t0 + 11s).ok());
    for (int lr : {0, 1, 2}) g.group.OnControl(g.group.TagFor(lr), control::Joined{5}, t0 + 11s);
    CHECK(g.group.state() == WorkerGroup::State::kRunning);
    CHECK(g.spawner.spawned.size() == 3);  // nobody started again
  }
  SECTION("none within the recovery timeout falls back") {
    TickJudged(g.group, t0 + 12s, w0);
    CHECK(g.group.state() == WorkerGroup::State::kStopping);
    CHECK(g.group.fallback_reason().starts_with("paused for a hang on another node"));
  }
}
