// FaultInjector: which faults this agent carries out, when, and on which
// worker, driven by fake time and step reports; and the progress lines
// workers write (steps and "inject N").
#include <catch2/catch.hpp>
#include <csignal>

#include "launcher/decide/fault_injector.h"
#include "launcher/output/progress_report.h"

namespace muster {
namespace {

using std::chrono::milliseconds;

FaultPlan Plan(const std::string& text, uint64_t seed = 0) {
  auto plan = ParseFaultPlan(text, seed);
  REQUIRE(plan.ok());
  return std::move(plan).value();
}

// Node 1 of 2, two workers each: ranks 2 and 3 live here.
FaultPlacement SecondNode() {
  FaultPlacement p;
  p.group_rank = 1;
  p.group_world_size = 2;
  p.global_rank_offset = 2;
  p.local_world_size = 2;
  p.world_size = 4;
  return p;
}

const Clock::time_point t0{};

TEST_CASE("a time trigger fires once, at its time, on the node holding the rank") {
  FaultInjector injector(Plan("kill-worker:SIGTERM,rank=3,after=2s"), t0, false);
  CHECK(injector.NextDeadline() == t0 + milliseconds(2000));
  CHECK(injector.OnTime(t0 + milliseconds(1999), SecondNode()).empty());
  auto actions = injector.OnTime(t0 + milliseconds(2000), SecondNode());
  REQUIRE(actions.size() == 1);
  CHECK(actions[0].global_rank == 3);
  CHECK(actions[0].spec->signal == SIGTERM);
  CHECK(actions[0].trigger == "after=2000ms");
  CHECK(injector.OnTime(t0 + milliseconds(5000), SecondNode()).empty());
  CHECK_FALSE(injector.NextDeadline().has_value());
}

TEST_CASE("a time trigger for a rank elsewhere, or while no workers run, is skipped and logged") {
  FaultInjector injector(Plan("hang-worker,rank=0,after=1s;kill-worker,rank=2,after=1s"), t0,
                         false);
  CHECK(injector.OnTime(t0 + milliseconds(1000), std::nullopt).empty());
  auto skips = injector.TakeSkips();
  REQUIRE(skips.size() == 2);
  CHECK(skips[0].why == "no workers ran on this node at after=1000ms");
  FaultInjector elsewhere(Plan("hang-worker,rank=0,after=1s"), t0, false);
  CHECK(elsewhere.OnTime(t0 + milliseconds(1000), SecondNode()).empty());
  REQUIRE(elsewhere.TakeSkips().size() == 1);
  CHECK(elsewhere.TakeSkips().empty());
}

TEST_CASE("a step trigger fires on the target rank's own report of that step or later") {
  FaultInjector injector(Plan("kill-worker,rank=2,step=10"), t0, false);
  CHECK_FALSE(injector.NextDeadline().has_value());
  CHECK(injector.OnStep(2, 9, SecondNode()).empty());
  CHECK(injector.OnStep(3, 12, SecondNode()).empty());  // another rank's report
  auto actions = injector.OnStep(2, 11, SecondNode());
  REQUIRE(actions.size() == 1);
  CHECK(actions[0].global_rank == 2);
  CHECK(actions[0].trigger == "step=11 (rank 2)");
  CHECK(injector.OnStep(2, 12, SecondNode()).empty());
}

TEST_CASE("a step-triggered worker fault waits while its rank is on another node") {
  FaultInjector injector(Plan("kill-worker,rank=0,step=5"), t0, false);
  CHECK(injector.OnStep(2, 7, SecondNode()).empty());
  CHECK(injector.TakeSkips().empty());
  FaultPlacement first = SecondNode();
  first.group_rank = 0;
  first.global_rank_offset = 0;
  CHECK(injector.OnStep(0, 7, first).size() == 1);
}

TEST_CASE("agent faults fire on every node, or only on the named one") {
  FaultInjector everywhere(Plan("kill-agent,after=1s"), t0, false);
  auto actions = everywhere.OnTime(t0 + milliseconds(1000), std::nullopt);
  REQUIRE(actions.size() == 1);
  CHECK(actions[0].global_rank == -1);

  FaultInjector named(Plan("drop-heartbeats:2s,node=1,step=3;kill-agent,node=0,step=3"), t0, false);
  actions = named.OnStep(3, 3, SecondNode());
  REQUIRE(actions.size() == 1);
  CHECK(actions[0].spec->kind == FaultKind::kDropHeartbeats);
  CHECK(named.TakeSkips().size() == 1);  // node 0's kill-agent is not ours
}

TEST_CASE("rank=any and node=any resolve alike on every node for one seed") {
  const FaultPlan plan = Plan("kill-worker,rank=any,after=1s", 11);
  const int rank = plan.faults[0].RankAmong(4);
  int fired = 0;
  for (int node = 0; node < 2; ++node) {
    FaultPlacement p = SecondNode();
    p.group_rank = node;
    p.global_rank_offset = 2 * node;
    FaultInjector injector(plan, t0, false);
    for (const auto& a : injector.OnTime(t0 + milliseconds(1000), p)) {
      CHECK(a.global_rank == rank);
      ++fired;
    }
  }
  CHECK(fired == 1);
}

TEST_CASE("crash-daemon is carried out only by the agent that hosts the daemon") {
  FaultInjector host(Plan("crash-daemon,after=1s"), t0, true);
  CHECK(host.OnTime(t0 + milliseconds(1000), std::nullopt).size() == 1);
  FaultInjector other(Plan("crash-daemon,after=1s"), t0, false);
  CHECK_FALSE(other.NextDeadline().has_value());
  CHECK(other.OnTime(t0 + milliseconds(1000), std::nullopt).empty());
}

TEST_CASE("worker faults are the workers', those they report fired are handed down") {
  FaultInjector injector(Plan("exit-worker:3,rank=2,step=4;corrupt-checkpoint,step=2;"
                              "exit-worker,rank=3,step=9"),
                         t0, false);
  CHECK(injector.OnStep(2, 100, SecondNode()).empty());
  CHECK(injector.FiredWorkerFaults().empty());
  injector.MarkFired(2);
  injector.MarkFired(0);
  injector.MarkFired(99);  // a worker's nonsense is ignored
  CHECK(injector.FiredWorkerFaults() == "0,2");
}

TEST_CASE("hang-worker stops the worker with SIGSTOP, kill-worker sends the spec's own signal") {
  const FaultPlan plan = Plan("hang-worker,rank=0,step=3;kill-worker:SIGTERM,rank=1,step=3");
  CHECK(WorkerFaultSignal(plan.faults[0]) == SIGSTOP);
  CHECK(WorkerFaultSignal(plan.faults[1]) == SIGTERM);
  CHECK(WorkerFaultSignal(Plan("kill-worker,rank=0,step=1").faults[0]) == SIGKILL);
}

TEST_CASE("a step trigger may not fire on cold Python workers, and does on hooked ones") {
  const FaultSpec step_fault = Plan("kill-worker,rank=1,step=5").faults[0];
  const auto cold = MayNotFireOnPython(step_fault, false);
  REQUIRE(cold);
  CHECK_THAT(*cold, Catch::Contains("step=5") && Catch::Contains("cold-started"));
  CHECK_FALSE(MayNotFireOnPython(step_fault, true));
  CHECK_FALSE(MayNotFireOnPython(Plan("kill-worker,rank=1,after=1s").faults[0], false));
  // A fault the worker runtime carries out never fires in a Python script.
  CHECK(MayNotFireOnPython(Plan("exit-worker,rank=1,step=5").faults[0], true));
}

TEST_CASE("progress lines give the newest step and the faults workers carried out") {
  auto report = ParseProgressReport("1\n2\ninject 4\n3\n");
  CHECK(report.step == 3);
  REQUIRE(report.injected.size() == 1);
  CHECK(report.injected[0] == 4);
  CHECK(ParseProgressReport("7\n8").step == 7);  // a partial line is not read
  CHECK(ParseProgressReport("").step == -1);
  CHECK(ParseProgressReport("junk\ninject x\n").step == -1);
  CHECK(ParseProgressReport("junk\ninject x\n").injected.empty());
  // The step hooks' lines carry the step's compute time in microseconds.
  const auto timed = ParseProgressReport("4 18000\n5 21000\n");
  CHECK(timed.step == 5);
  CHECK(timed.compute_us == 21000);
  CHECK_FALSE(ParseProgressReport("4 18000\n5\n").compute_us);  // the newest line's, or none
  CHECK(ParseProgressReport("5 x\n").step == -1);
  CHECK(ParseProgressReport("stacks 7\n").stacks_fd == 7);
  CHECK_FALSE(ParseProgressReport("stacks x\n").stacks_fd);
}

}  // namespace
}  // namespace muster
