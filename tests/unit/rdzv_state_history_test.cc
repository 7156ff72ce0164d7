// The history the status page shows: why each generation formed, the nodes
// that went, the daemon's recent events, each bounded, with ages measured
// on the fake clock.
#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "tests/unit/rdzv_state_test_support.h"

using namespace muster::rdzv;
using namespace muster::rdzv::testing;
using namespace std::chrono_literals;

namespace {

RunStatus RunOf(FakeCluster& c) { return c.core().Status("job", c.now()).runs.at(0); }

// A running job of three nodes at most, with restarts to spare.
FakeCluster ThreeRunning(int min_nodes = 2) {
  FakeCluster c(min_nodes, 3, /*max_restarts=*/3);
  c.AddAgents(3);
  c.JoinAll();
  c.ExpectNewGeneration();
  return c;
}

std::vector<std::string> Kinds(const StatusSnapshot& snapshot) {
  std::vector<std::string> kinds;
  for (const EventStatus& e : snapshot.events) kinds.push_back(e.kind);
  return kinds;
}

}  // namespace

TEST_CASE("a bounded log keeps only its last entries, oldest first", "[rdzv][history]") {
  struct Case {
    size_t capacity;
    int adds;
    std::vector<int> kept;
  };
  const std::vector<Case> cases = {
      {3, 0, {}}, {3, 2, {0, 1}}, {3, 3, {0, 1, 2}}, {3, 5, {2, 3, 4}}, {1, 4, {3}}};
  for (const Case& k : cases) {
    INFO("capacity " << k.capacity << ", " << k.adds << " added");
    BoundedLog<int> log(k.capacity);
    for (int i = 0; i < k.adds; ++i) log.Add(i);
    CHECK(std::vector<int>(log.begin(), log.end()) == k.kept);
    CHECK(log.size() <= k.capacity);
  }
}

TEST_CASE("each generation is recorded with why it formed", "[rdzv][history]") {
  struct Case {
    const char* name;
    std::function<void(FakeCluster&)> cause;
    std::string reason;
    std::string node_id;
    std::string detail;
  };
  const std::vector<Case> cases = {
      {"a node's connection is lost",
       [](FakeCluster& c) {
         c.Disconnect(1);
         c.Advance(c.settings().disconnect_grace);
       },
       "node lost", "node1", "connection lost"},
      {"a node goes silent",
       [](FakeCluster& c) {
         c.agent(2).silent = true;
         c.Run(c.settings().heartbeat_timeout + 1ms);
       },
       "node lost", "node2", "heartbeat timeout"},
      {"a worker fails", [](FakeCluster& c) { c.Fail(0, /*exit_code=*/3); }, "worker failed",
       "node0", "exit code 3"},
      {"a node leaves",
       [](FakeCluster& c) {
         c.Send(1, Leave{"job", "node1"});
       },
       "left", "node1", "left"},
  };
  for (const Case& k : cases) {
    SECTION(k.name) {
      FakeCluster c = ThreeRunning();
      k.cause(c);
      c.Run(c.settings().drain_timeout + 1s);
      const RunStatus run = RunOf(c);
      REQUIRE(run.generations.size() == 2);
      CHECK(run.generations[0].generation == 1);
      CHECK(run.generations[0].reason == "joined");
      CHECK(run.generations[0].nodes == 3);
      const RunStatus::Generation& latest = run.generations[1];
      CHECK(latest.generation == run.generation);
      CHECK(latest.generation == 2);
      CHECK(latest.reason == k.reason);
      CHECK(latest.node_id == k.node_id);
      CHECK(latest.detail == k.detail);
      CHECK(latest.nodes == (k.reason == "worker failed" ? 3 : 2));
      CHECK(latest.world_size == latest.nodes);
    }
  }
}

TEST_CASE("a newcomer admitted to a running job forms an 'admitted' generation",
          "[rdzv][history]") {
  FakeCluster c(2, 3);
  c.AddAgents(2);
  c.JoinAll();
  c.Run(c.settings().last_call_timeout);
  c.ExpectNewGeneration();
  c.Join(c.AddAgent());
  c.Run(c.settings().last_call_timeout + c.settings().drain_timeout);
  const RunStatus run = RunOf(c);
  REQUIRE(run.generations.size() == 2);
  CHECK(run.generations[0].reason == "joined");
  CHECK(run.generations[0].detail == "last call ended");
  CHECK(run.generations[1].reason == "admitted");
  CHECK(run.generations[1].nodes == 3);
}

TEST_CASE("a round gathered after falling below MIN is 'joined', not the loss before it",
          "[rdzv][history]") {
  FakeCluster c = ThreeRunning(/*min_nodes=*/3);
  c.Disconnect(2);
  c.Advance(c.settings().disconnect_grace);
  c.Join(c.AddAgent());
  const RunStatus run = RunOf(c);
  REQUIRE(run.generations.size() == 2);
  CHECK(run.generations[1].reason == "joined");
  CHECK(run.generations[1].node_id.empty());
}

TEST_CASE("a daemon restart that finds every member back is recorded at the same generation",
          "[rdzv][history]") {
  FakeCluster c = ThreeRunning();
  c.RestartDaemon();
  for (int i = 0; i < 3; ++i) c.Rejoin(i);
  const RunStatus run = RunOf(c);
  REQUIRE(run.generations.size() == 1);  // the restarted daemon's own history
  CHECK(run.generations[0].generation == 1);
  CHECK(run.generations[0].reason == "daemon restart");
}

TEST_CASE("generation ages count from when each formed", "[rdzv][history]") {
  FakeCluster c = ThreeRunning();
  c.Run(5s);
  c.Disconnect(1);
  c.Advance(c.settings().disconnect_grace);
  c.Run(2s);
  const RunStatus run = RunOf(c);
  REQUIRE(run.generations.size() == 2);
  CHECK(run.generations[0].age == 5s + c.settings().disconnect_grace + 2s);
  CHECK(run.generations[1].age == 2s);
}

TEST_CASE("a dead node is listed as departed with why, when and the ranks it held",
          "[rdzv][history]") {
  FakeCluster c = ThreeRunning();
  c.Run(1s);
  c.Disconnect(1);
  c.Advance(c.settings().disconnect_grace);
  c.Run(3s);
  RunStatus run = RunOf(c);
  REQUIRE(run.departed.size() == 1);
  const RunStatus::Departed& gone = run.departed[0];
  CHECK(gone.node.node_id == "node1");
  CHECK(gone.node.host == "host1");
  CHECK(gone.state == "dead");
  CHECK(gone.why == "connection lost");
  CHECK(gone.generation == 1);
  CHECK(gone.node.member);
  CHECK(gone.node.group_rank == 1);
  CHECK(gone.age == 3s);
  CHECK(gone.node.heartbeat_age == 3s + c.settings().disconnect_grace);
  for (const NodeStatus& node : run.nodes) CHECK(node.node_id != "node1");

  // It comes back under its id: no longer departed.
  c.agent(1).conn = 0;
  c.Join(1);
  run = RunOf(c);
  CHECK(run.departed.empty());
}

TEST_CASE("departed nodes are bounded to the last kDepartedKept", "[rdzv][history]") {
  FakeCluster c(1, 1);
  const int total = static_cast<int>(RunHistory::kDepartedKept) + 10;
  c.AddAgents(total + 1);
  c.Join(0);  // MAX: node0 runs alone; the others stand by, then leave
  for (int i = 1; i <= total; ++i) {
    c.Join(i);
    c.Send(i, Leave{"job", "node" + std::to_string(i)});
  }
  const RunStatus run = RunOf(c);
  REQUIRE(run.departed.size() == RunHistory::kDepartedKept);
  CHECK(run.departed.front().node.node_id == "node11");
  CHECK(run.departed.back().node.node_id == "node" + std::to_string(total));
  CHECK(run.departed.back().state == "left");
  CHECK_FALSE(run.departed.back().node.member);
  CHECK(run.generations.size() == 1);  // standbys leaving re-form nothing
}

TEST_CASE("generations are bounded to the last kGenerationsKept", "[rdzv][history]") {
  FakeCluster c(1, 2, /*max_restarts=*/1000);
  c.AddAgents(2);
  c.JoinAll();
  c.ExpectNewGeneration();
  const int failures = static_cast<int>(RunHistory::kGenerationsKept) + 5;
  for (int i = 0; i < failures; ++i) {
    c.Fail(0);
    c.Run(c.settings().drain_timeout + 100ms);
  }
  const RunStatus run = RunOf(c);
  REQUIRE(run.generations.size() == RunHistory::kGenerationsKept);
  CHECK(run.generations.back().generation == run.generation);
  CHECK(run.generations.front().generation == run.generation - RunHistory::kGenerationsKept + 1);
}

TEST_CASE("the daemon's recent events name faults, new generations and the run's end",
          "[rdzv][history][events]") {
  FakeCluster c = ThreeRunning();
  c.Fail(0, 7);
  c.Run(c.settings().drain_timeout + 1s);
  c.Disconnect(2);
  c.Advance(c.settings().disconnect_grace);
  c.Run(2s);
  for (int i : {0, 1}) c.Succeed(i);

  const StatusSnapshot snapshot = c.core().Status("", c.now());
  CHECK(Kinds(snapshot) == std::vector<std::string>{"generation", "worker_failed", "generation",
                                                    "node_dead", "generation", "run_ended"});
  CHECK(snapshot.events[1].node_id == "node0");
  CHECK(snapshot.events[1].run_id == "job");
  CHECK_THAT(snapshot.events[1].text, Catch::Contains("exit code 7"));
  CHECK(snapshot.events[3].node_id == "node2");
  CHECK_THAT(snapshot.events[3].text, Catch::Contains("connection lost"));
  CHECK(snapshot.events[5].age == 0ms);
  CHECK(snapshot.events[3].age == 2s);
  CHECK_THAT(snapshot.events[5].text, Catch::StartsWith("succeeded"));
  // Another run's status does not show them.
  CHECK(c.core().Status("other", c.now()).events.empty());
}

TEST_CASE("the daemon's recent events are bounded to the last kEventsKept",
          "[rdzv][history][events]") {
  EventLog log;
  for (size_t i = 0; i < EventLog::kEventsKept + 50; ++i) {
    log.Add(DaemonEvent{{}, "node_dead", "job", "node" + std::to_string(i), ""});
  }
  REQUIRE(log.events().size() == EventLog::kEventsKept);
  CHECK(log.events().begin()->node_id == "node50");
}

TEST_CASE("a new core handed the old one's event log keeps its events", "[rdzv][history][events]") {
  FakeCluster c = ThreeRunning();
  std::shared_ptr<EventLog> events = c.core().event_log();
  RendezvousCore successor(c.settings());
  successor.set_event_log(events);
  CHECK(Kinds(successor.Status("", c.now())) == std::vector<std::string>{"generation"});
}

TEST_CASE("a straggler flagged, then cleared, is among the recent events",
          "[rdzv][history][events]") {
  Settings settings = TestSettings();
  settings.straggler_window = 3s;
  FakeCluster c(3, 3, 0, settings);
  c.AddAgents(3);
  c.JoinAll();
  c.ExpectNewGeneration();
  // Each agent steps at its rate per second, heart-beating every 0.5 s.
  const auto step = [&c](const std::vector<uint64_t>& per_second, Duration how_long) {
    const Time end = c.now() + how_long;
    while (c.now() < end) {
      for (size_t i = 0; i < per_second.size(); ++i) {
        c.agent(static_cast<int>(i)).step += per_second[i] / 2;
      }
      c.HeartbeatAll();
      c.Advance(500ms);
    }
  };
  step({20, 20, 2}, 8s);
  step({20, 20, 20}, 8s);
  std::vector<EventStatus> stragglers;
  for (const EventStatus& e : c.core().Status("", c.now()).events) {
    if (e.kind.starts_with("straggler")) stragglers.push_back(e);
  }
  REQUIRE(stragglers.size() == 2);
  CHECK(stragglers[0].kind == "straggler");
  CHECK(stragglers[0].node_id == "node2");
  CHECK(stragglers[0].text == "host host2: 2 steps/s against a median of 20");
  CHECK(stragglers[1].kind == "straggler_cleared");
  CHECK(stragglers[1].node_id == "node2");
}
