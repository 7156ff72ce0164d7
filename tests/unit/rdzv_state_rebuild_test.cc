// Rebuilding a run after a daemon restart from the assignments the agents
// report in their Join.
#include <catch2/catch.hpp>

#include "tests/unit/rdzv_state_test_support.h"

using namespace muster::rdzv;
using namespace muster::rdzv::testing;
using namespace std::chrono_literals;

namespace {

// Three agents that reached generation 2 with one restart, then lost the daemon.
FakeCluster RestartedAtGeneration2(int min_nodes) {
  FakeCluster c = AtGeneration2AfterOneRestart(min_nodes);
  c.RestartDaemon();
  return c;
}

}  // namespace

TEST_CASE("a restarted daemon resumes the generation every member reports, unchanged",
          "[rdzv][rebuild]") {
  FakeCluster c = RestartedAtGeneration2(3);
  std::vector<Assignment> before;
  for (int i = 0; i < 3; ++i) before.push_back(*c.agent(i).assignment);

  c.Rejoin(2);
  c.Rejoin(0);
  CHECK(c.Phase() == "rebuilding");
  // Nodes that report running workers are not told to wait: that would stop them.
  CHECK_FALSE(c.agent(0).waiting);
  auto actions = c.Rejoin(1);
  CHECK(CountSent<AssignmentMessage>(actions) == 3);
  for (int i = 0; i < 3; ++i) CHECK(*c.agent(i).assignment == before[static_cast<size_t>(i)]);
  c.ExpectNoNewGeneration();
  CHECK(c.Phase() == "running");

  // And it carries on from there: the restart count survived the daemon.
  c.Run(5s);
  c.ExpectNoNewGeneration();
  c.Fail(0);
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.front().generation == 3);
  CHECK(gen.front().restart_count == 2);
}

TEST_CASE("a member that never reports back is left out after close_timeout in a new generation",
          "[rdzv][rebuild]") {
  FakeCluster c = RestartedAtGeneration2(2);
  c.Rejoin(0);
  c.Rejoin(2);
  c.Run(c.settings().close_timeout - 1ms);
  c.ExpectNoNewGeneration();
  CHECK(c.Phase() == "rebuilding");

  c.Advance(1ms);
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.front().generation == 3);
  CHECK(gen.front().restart_count == 1);
  CHECK(c.Members() == std::vector<int>{0, 2});
  CHECK(gen[1].global_rank_offset == 2);
  CHECK(gen[1].world_size == 6);
}

TEST_CASE("agents without workers tell a restarted daemon which generations they were handed",
          "[rdzv][rebuild]") {
  FakeCluster c = RestartedAtGeneration2(3);
  // Their workers stopped (no report): only Join.last_generation says how
  // far the run got, and an agent ignores a generation it has seen.
  auto actions = c.JoinAll();
  CHECK(CountSent<AssignmentMessage>(actions) == 3);
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.front().generation == 3);
}

TEST_CASE("mixed generations reported after a daemon restart take the highest", "[rdzv][rebuild]") {
  FakeCluster c(3, 3, /*max_restarts=*/3);
  c.AddAgents(3);
  c.JoinAll();
  c.ExpectNewGeneration();
  const Assignment missed = *c.agent(2).assignment;  // node2 never saw generation 2
  c.Fail(0);
  c.ExpectNewGeneration();
  c.RestartDaemon();
  c.agent(2).assignment = missed;

  c.Rejoin(2);
  c.Rejoin(0);
  c.Rejoin(1);
  CHECK(c.generation() == 2);  // generation 2 lacks its node2 report: not complete
  c.Run(c.settings().close_timeout);
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.front().generation == 3);
  CHECK(gen.front().restart_count == 1);
  CHECK(c.Members() == std::vector<int>{0, 1, 2});
}

TEST_CASE("a generation number an agent already ran is never handed out again after a restart",
          "[rdzv][rebuild]") {
  // Generation 1 was node0 alone; generation 2 admitted node1 and node2, but
  // node0 never received it before the daemon went down, and node2 died.
  FakeCluster c(1, 3);
  c.AddAgents(3);
  c.Join(0);
  c.Run(c.settings().last_call_timeout);
  c.ExpectNewGeneration();
  const Assignment alone = *c.agent(0).assignment;
  c.Join(1);
  c.Join(2);
  c.Run(c.settings().last_call_timeout);
  c.ExpectNewGeneration();
  REQUIRE(c.generation() == 2);
  c.RestartDaemon();
  c.agent(0).assignment = alone;

  c.Rejoin(0);  // generation 1 is complete on its own: resumed
  CHECK(c.Phase() == "running");
  c.Rejoin(1);  // reports generation 2 (of three nodes)
  c.Run(c.settings().last_call_timeout);
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.front().generation == 3);
  CHECK(c.Members() == std::vector<int>{0, 1});
}
