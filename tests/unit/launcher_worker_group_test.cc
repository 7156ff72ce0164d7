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

}  // namespace

TEST_CASE("workers that all exit 0 make the attempt succeed", "[group]") {
  FakeSpawner spawner;
  WorkerGroup group(spawner, 0, 30s);
  REQUIRE(group.Start(Specs(3), t0).ok());
  CHECK(spawner.spawned.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(group.state() == WorkerGroup::State::kRunning);
    group.OnExit(group.TagFor(i), ExitStatus::Exited(0), t0, w0);
  }
  CHECK(group.state() == WorkerGroup::State::kSucceeded);
  CHECK(group.failures().empty());
  CHECK(spawner.signals.empty());
}

TEST_CASE("the first failure stops the others with SIGTERM, then SIGKILL after the timeout",
          "[group]") {
  FakeSpawner spawner;
  WorkerGroup group(spawner, 0, 5s);
  REQUIRE(group.Start(Specs(3), t0).ok());
  group.OnExit(group.TagFor(1), ExitStatus::Exited(7), t0 + 1s, w0);
  CHECK(group.state() == WorkerGroup::State::kStopping);
  CHECK(spawner.signals == std::vector<std::pair<pid_t, int>>{
                               {1000, SIGTERM}, {1000, SIGCONT}, {1002, SIGTERM}, {1002, SIGCONT}});
  REQUIRE(group.deadline() == t0 + 6s);

  TickJudged(group, t0 + 5s);  // not yet
  CHECK(spawner.signals.size() == 4);
  group.OnExit(group.TagFor(0), ExitStatus::Killed(SIGTERM), t0 + 5s, w0);
  TickJudged(group, t0 + 6s);
  CHECK(spawner.signals.back() == std::pair<pid_t, int>{1002, SIGKILL});
  group.OnExit(group.TagFor(2), ExitStatus::Killed(SIGKILL), t0 + 6s, w0);

  CHECK(group.state() == WorkerGroup::State::kFailed);
  REQUIRE(group.failures().size() == 1);
  CHECK(group.failures()[0].global_rank == 11);
  CHECK(group.failures()[0].status.code == 7);
}

TEST_CASE("a worker that fails on its own while others are stopped is reported second", "[group]") {
  FakeSpawner spawner;
  WorkerGroup group(spawner, 0, 5s);
  REQUIRE(group.Start(Specs(3), t0).ok());
  group.OnExit(group.TagFor(2), ExitStatus::Killed(SIGSEGV), t0, w0);
  group.OnExit(group.TagFor(0), ExitStatus::Exited(3), t0, w0);
  group.OnExit(group.TagFor(1), ExitStatus::Killed(SIGTERM), t0, w0);
  CHECK(group.state() == WorkerGroup::State::kFailed);
  REQUIRE(group.failures().size() == 2);
  CHECK(group.failures()[0].local_rank == 2);
  CHECK(group.failures()[0].status.ShellCode() == 128 + SIGSEGV);
  CHECK(group.failures()[1].local_rank == 0);
}

TEST_CASE("a signal to muster is forwarded to every worker group and ends interrupted", "[group]") {
  FakeSpawner spawner;
  WorkerGroup group(spawner, 0, 5s);
  REQUIRE(group.Start(Specs(2), t0).ok());
  group.Stop(SIGINT, t0);
  CHECK(spawner.signals == std::vector<std::pair<pid_t, int>>{
                               {1000, SIGINT}, {1000, SIGCONT}, {1001, SIGINT}, {1001, SIGCONT}});
  group.OnExit(group.TagFor(0), ExitStatus::Killed(SIGINT), t0, w0);
  group.OnExit(group.TagFor(1), ExitStatus::Exited(1), t0, w0);
  CHECK(group.state() == WorkerGroup::State::kInterrupted);
  CHECK(group.stop_signal() == SIGINT);
  CHECK(group.failures().empty());
}

TEST_CASE("a second signal while stopping escalates to SIGKILL at once", "[group]") {
  FakeSpawner spawner;
  WorkerGroup group(spawner, 0, 30s);
  REQUIRE(group.Start(Specs(1), t0).ok());
  group.Stop(SIGTERM, t0);
  group.Stop(SIGTERM, t0 + 1s);
  CHECK(spawner.signals.back() == std::pair<pid_t, int>{1000, SIGKILL});
}

TEST_CASE("exits from an earlier attempt are ignored", "[group]") {
  FakeSpawner spawner;
  WorkerGroup old_group(spawner, 0, 5s);
  WorkerGroup group(spawner, 1, 5s);
  REQUIRE(group.Start(Specs(1), t0).ok());
  group.OnExit(old_group.TagFor(0), ExitStatus::Exited(1), t0, w0);
  CHECK(group.state() == WorkerGroup::State::kRunning);
}

TEST_CASE("a worker that cannot be spawned stops the ones already started", "[group]") {
  FakeSpawner spawner;
  spawner.fail_at_spawn = 1;
  WorkerGroup group(spawner, 0, 5s);
  auto status = group.Start(Specs(3), t0);
  CHECK(status.IsIoError());
  CHECK(spawner.signals == std::vector<std::pair<pid_t, int>>{{1000, SIGTERM}, {1000, SIGCONT}});
  group.OnExit(group.TagFor(0), ExitStatus::Killed(SIGTERM), t0, w0);
  CHECK(group.finished());
}

TEST_CASE("a worker silent for the hang timeout after reporting progress is killed as hung",
          "[group][hang]") {
  FakeSpawner spawner;
  WorkerGroup group(spawner, 0, 30s, 2s);
  REQUIRE(group.Start(Specs(3), t0).ok());
  CHECK_FALSE(group.deadline());                         // nothing reported yet: nothing to watch
  CHECK(group.OnProgress(group.TagFor(0), 1, t0 + 1s));  // first reports: the agent re-arms
  CHECK(group.OnProgress(group.TagFor(1), 1, t0 + 1s));
  REQUIRE(group.deadline() == t0 + 3s);
  CHECK_FALSE(group.OnProgress(group.TagFor(0), 2, t0 + 2s));  // rank 0 moves on, rank 1 stops
  TickJudged(group, t0 + 2500ms, w0);
  CHECK(group.state() == WorkerGroup::State::kRunning);
  CHECK(spawner.signals.empty());

  TickJudged(group, t0 + 3s, w0);
  CHECK(group.state() == WorkerGroup::State::kStopping);
  REQUIRE(group.failures().size() == 1);
  const WorkerFailure& hung = group.failures().front();
  CHECK(hung.hung);
  CHECK(hung.local_rank == 1);
  CHECK(hung.last_step == 1);
  CHECK(hung.silent_for == 2s);
  // SIGKILL to the hung one first, then SIGTERM (and SIGCONT, so that a
  // stopped worker acts on it) to everyone still running.
  REQUIRE(spawner.signals.size() == 7);
  CHECK(spawner.signals[0] == std::pair<pid_t, int>{1001, SIGKILL});
  CHECK(spawner.signals[1].second == SIGTERM);
  CHECK(spawner.signals[2].second == SIGCONT);

  // Its death by SIGKILL is not a second failure; the others stop.
  group.OnExit(group.TagFor(1), ExitStatus::Killed(SIGKILL), t0 + 3s, w0);
  group.OnExit(group.TagFor(0), ExitStatus::Killed(SIGTERM), t0 + 3s, w0);
  group.OnExit(group.TagFor(2), ExitStatus::Killed(SIGTERM), t0 + 3s, w0);
  CHECK(group.state() == WorkerGroup::State::kFailed);
  CHECK(group.failures().size() == 1);
}

TEST_CASE("workers that never report progress, or no hang timeout, are never called hung",
          "[group][hang]") {
  FakeSpawner spawner;
  WorkerGroup silent(spawner, 0, 30s, 1s);
  REQUIRE(silent.Start(Specs(2), t0).ok());
  TickJudged(silent, t0 + 3600s, w0);
  CHECK(silent.state() == WorkerGroup::State::kRunning);

  WorkerGroup off(spawner, 1, 30s, 0s);
  REQUIRE(off.Start(Specs(2), t0).ok());
  off.OnProgress(off.TagFor(0), 5, t0);
  CHECK_FALSE(off.deadline());
  TickJudged(off, t0 + 3600s, w0);
  CHECK(off.state() == WorkerGroup::State::kRunning);
  CHECK(spawner.signals.empty());
}

HangVerdict Alive() {
  HangVerdict verdict;
  verdict.alive = true;
  return verdict;
}

TEST_CASE("under the auto rule a silent worker is suspected, and a verdict decides",
          "[group][hang]") {
  FakeSpawner spawner;
  WorkerGroup group(spawner, 0, 30s);
  group.EnableAutoHang(AutoHangRule{});
  REQUIRE(group.Start(Specs(3), t0).ok());
  group.OnDumpsStacks(group.TagFor(2), 9);
  for (int step = 1; step <= 30; ++step) {
    for (int rank = 0; rank < 3; ++rank) {
      group.OnProgress(group.TagFor(rank), step, t0 + step * 100ms);
    }
  }
  // 100 ms steps: suspected 20 s (the floor) after the last report.
  const Time last = t0 + 3s;
  REQUIRE(group.deadline() == last + 20s);
  group.OnTick(last + 20s, w0);
  REQUIRE(group.hang_evidence_wanted());
  CHECK_FALSE(group.deadline());  // the agent gathers the evidence
  const auto subjects = group.HangSubjects();
  REQUIRE(subjects.size() == 3);
  CHECK(subjects[2].dumps_stacks);
  CHECK(subjects[2].stack_file == "/proc/1002/fd/9");
  CHECK_FALSE(subjects[0].dumps_stacks);

  // The suspect reported meanwhile: it was slow, not hung.
  group.OnProgress(group.TagFor(0), 31, last + 20500ms);
  group.OnHangEvidence(HangVerdict{}, "", last + 21s, w0);
  CHECK(spawner.signals.empty());
  CHECK_FALSE(group.hang_evidence_wanted());
  for (int rank = 0; rank < 3; ++rank) group.OnProgress(group.TagFor(rank), 31, last);
  group.OnTick(last + 20s, w0);
  REQUIRE(group.hang_evidence_wanted());

  // Alive: nothing is killed, and the silence counts from now.
  group.OnHangEvidence(Alive(), "", last + 21s, w0);
  CHECK_FALSE(group.hang_evidence_wanted());
  CHECK(group.deadline() == last + 41s);
  CHECK(spawner.signals.empty());

  // Hung: the culprit the verdict names is killed, not the first silent one.
  group.OnTick(last + 41s, w0);
  REQUIRE(group.hang_evidence_wanted());
  group.OnHangEvidence(
      HangVerdict{.alive = false, .culprits = {12}, .waiting_at = {}, .summary = "rank 12 at x"},
      "/run/hang-stacks.txt", last + 42s, w0);
  REQUIRE(group.failures().size() == 1);
  const WorkerFailure& hung = group.failures().front();
  CHECK(hung.hung);
  CHECK(hung.global_rank == 12);
  CHECK(hung.hang_summary == "rank 12 at x");
  CHECK(hung.stacks_file == "/run/hang-stacks.txt");
  CHECK(spawner.signals.front() == std::pair<pid_t, int>{1002, SIGKILL});
  CHECK(group.state() == WorkerGroup::State::kStopping);
}

TEST_CASE("under a fixed --hang-timeout a verdict of alive does not save the worker",
          "[group][hang]") {
  FakeSpawner spawner;
  WorkerGroup group(spawner, 0, 30s, 2s);
  REQUIRE(group.Start(Specs(2), t0).ok());
  group.OnProgress(group.TagFor(0), 1, t0);
  group.OnTick(t0 + 2s, w0);
  REQUIRE(group.hang_evidence_wanted() == group.TagFor(0));
  group.OnHangEvidence(Alive(), "", t0 + 3s, w0);
  REQUIRE(group.failures().size() == 1);
  CHECK(group.failures().front().local_rank == 0);
}

TEST_CASE("a worker fault signals that worker's process alone, through the spawner", "[group]") {
  FakeSpawner spawner;
  WorkerGroup group(spawner, 0, 30s);
  REQUIRE(group.Start(Specs(2), t0).ok());
  CHECK(group.SignalWorker(1, SIGSTOP));
  CHECK(spawner.process_signals == std::vector<std::pair<pid_t, int>>{{1001, SIGSTOP}});
  CHECK(spawner.signals.empty());
  CHECK(group.state() == WorkerGroup::State::kRunning);
}

TEST_CASE("a worker fault aimed at a worker that already exited sends nothing", "[group]") {
  FakeSpawner spawner;
  WorkerGroup group(spawner, 0, 30s);
  REQUIRE(group.Start(Specs(2), t0).ok());
  group.OnExit(group.TagFor(0), ExitStatus::Exited(0), t0, w0);
  CHECK_FALSE(group.SignalWorker(0, SIGKILL));
  CHECK_FALSE(group.SignalWorker(7, SIGKILL));  // no such local rank
  CHECK(spawner.process_signals.empty());
}

TEST_CASE("the node's step is the oldest newest step of the workers that report one",
          "[group][progress]") {
  FakeSpawner spawner;
  WorkerGroup group(spawner, 0, 30s);
  REQUIRE(group.Start(Specs(3), t0).ok());
  CHECK_FALSE(group.NodeStep());  // nothing reported: no step, not 0
  group.OnProgress(group.TagFor(0), 40, t0 + 1s);
  CHECK(group.NodeStep() == 40u);  // rank 1 and 2 said nothing yet: not counted
  group.OnProgress(group.TagFor(1), 38, t0 + 1s);
  group.OnProgress(group.TagFor(2), 41, t0 + 1s);
  CHECK(group.NodeStep() == 38u);                  // the slowest worker speaks for the node
  group.OnProgress(group.TagFor(1), -1, t0 + 2s);  // progress without a step keeps the step
  CHECK(group.NodeStep() == 38u);
  group.OnProgress(group.TagFor(1), 45, t0 + 2s);
  CHECK(group.NodeStep() == 40u);
  // A worker that is gone no longer counts.
  group.OnExit(group.TagFor(0), ExitStatus::Exited(0), t0 + 3s, w0);
  CHECK(group.NodeStep() == 41u);

  // A new attempt (a restart) counts from its own workers' reports.
  WorkerGroup next(spawner, 1, 30s);
  REQUIRE(next.Start(Specs(3), t0 + 4s).ok());
  CHECK_FALSE(next.NodeStep());
}
