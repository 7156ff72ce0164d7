// FaultRehearsal: a time trigger fires on the agent's io_context and reaches
// the worker through the agent's hook; a step trigger fires on the step a
// worker reports; a heartbeat fault in a static run (no rendezvous) is
// skipped; the workers' variables carry the plan.
#include "launcher/agent/fault_rehearsal.h"

#include <catch2/catch.hpp>
#include <csignal>
#include <utility>
#include <vector>

namespace muster {
namespace {
using namespace std::chrono_literals;

FaultPlan Plan(const std::string& text) {
  auto plan = ParseFaultPlan(text, 7);
  REQUIRE(plan.ok());
  return std::move(plan).value();
}

// Node 1 of 2, two workers each: ranks 2 and 3 live here.
FaultPlacement SecondNode() {
  rdzv::Assignment node;
  node.group_rank = 1;
  node.group_world_size = 2;
  node.global_rank_offset = 2;
  node.local_world_size = 2;
  node.world_size = 4;
  return PlacementOf(node);
}

struct Signalled {
  std::vector<std::pair<int, int>> sent;  // (rank, signal)
  FaultRehearsal::Hooks Hooks() {
    FaultRehearsal::Hooks hooks;
    hooks.placement = [] { return std::optional<FaultPlacement>(SecondNode()); };
    hooks.signal_worker = [this](int rank, int sig) {
      sent.emplace_back(rank, sig);
      return true;
    };
    return hooks;
  }
};

TEST_CASE("a time trigger reaches its worker through the agent's hook", "[fault-rehearsal]") {
  boost::asio::io_context io;
  Signalled workers;
  FaultRehearsal rehearsal(io, Plan("kill-worker:SIGTERM,rank=3,after=20ms"), false,
                           FaultRehearsal::WorkerSteps::kPythonCold, workers.Hooks());
  io.run_for(300ms);
  CHECK(workers.sent == std::vector<std::pair<int, int>>{{3, SIGTERM}});
  rehearsal.Stop();
}

TEST_CASE("a step trigger fires on the step a worker reports", "[fault-rehearsal]") {
  boost::asio::io_context io;
  Signalled workers;
  FaultRehearsal rehearsal(io, Plan("kill-worker,rank=2,step=10"), false,
                           FaultRehearsal::WorkerSteps::kPythonCold, workers.Hooks());
  rehearsal.OnProgress(2, {.step = 9, .injected = {}});
  CHECK(workers.sent.empty());
  rehearsal.OnProgress(2, {.step = 11, .injected = {}});
  REQUIRE(workers.sent.size() == 1);
  CHECK(workers.sent[0].first == 2);
  std::map<std::string, std::string> variables;
  rehearsal.AddVariables(variables);
  CHECK(variables.at(kInjectEnv) == "kill-worker,rank=2,step=10");
  CHECK(variables.at(kInjectSeedEnv) == "7");
}

TEST_CASE("a heartbeat fault without a rendezvous is skipped", "[fault-rehearsal]") {
  boost::asio::io_context io;
  Signalled workers;
  // No suspend_traffic hook: a static run.
  FaultRehearsal rehearsal(io, Plan("drop-heartbeats:1s,after=10ms"), false,
                           FaultRehearsal::WorkerSteps::kPythonCold, workers.Hooks());
  io.run_for(200ms);
  CHECK(workers.sent.empty());
  rehearsal.ReportUnfired(SecondNode());
}

TEST_CASE("a slow rank waits for the workers, then is stopped and continued in turn",
          "[fault-rehearsal]") {
  boost::asio::io_context io;
  Signalled workers;
  bool running = false;
  auto hooks = workers.Hooks();
  auto placement = hooks.placement;
  hooks.placement = [&]() -> std::optional<FaultPlacement> {
    if (!running) return std::nullopt;
    return placement();
  };
  FaultRehearsal rehearsal(io, Plan("slow,rank=2,factor=4"), false,
                           FaultRehearsal::WorkerSteps::kPythonHooked, hooks);
  io.run_for(100ms);
  CHECK(workers.sent.empty());  // no workers yet: it waits, not skipped
  running = true;
  rehearsal.OnWorkersStarted();
  io.restart();  // the first run_for ran out of work
  io.run_for(420ms);
  // factor 4 of a 100 ms period: stopped 75 ms, running 25 ms.
  REQUIRE(workers.sent.size() >= 6);
  int stops = 0;
  for (size_t i = 0; i < workers.sent.size(); ++i) {
    CHECK(workers.sent[i].first == 2);
    CHECK(workers.sent[i].second == (i % 2 == 0 ? SIGSTOP : SIGCONT));
    stops += workers.sent[i].second == SIGSTOP;
  }
  CHECK(stops >= 3);
  CHECK(stops <= 6);
  rehearsal.Stop();
  if (workers.sent.back().second == SIGSTOP) FAIL("left stopped");
}

}  // namespace
}  // namespace muster
