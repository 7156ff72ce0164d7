// Forming the first round: MIN/MAX, the last call window, join_timeout, and
// which joins the daemon accepts.
#include <catch2/catch.hpp>

#include "tests/unit/rdzv_state_test_support.h"

using namespace muster::rdzv;
using namespace muster::rdzv::testing;
using namespace std::chrono_literals;

TEST_CASE("the round closes at once when MAX nodes have joined", "[rdzv][round]") {
  FakeCluster c(2, 3);
  c.AddAgents(3);
  c.Join(0);
  c.Join(1);
  CHECK(c.generation() == 0);
  CHECK(c.agent(1).waiting);

  auto actions = c.Join(2);  // no time passes
  CHECK(CountSent<AssignmentMessage>(actions) == 3);
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.front().generation == 1);
  CHECK(c.Members() == std::vector<int>{0, 1, 2});
  CHECK(c.Phase() == "running");
}

TEST_CASE("at MIN nodes the round waits last_call_timeout, then closes", "[rdzv][round]") {
  FakeCluster c(2, 4);
  c.AddAgents(2);
  c.JoinAll();
  CHECK(c.Phase() == "last_call");

  c.Run(c.settings().last_call_timeout - 1ms);
  CHECK(c.generation() == 0);
  CHECK(c.agent(0).waiting);

  c.Advance(1ms);
  c.ExpectNewGeneration();
  CHECK(c.generation() == 1);
  CHECK(c.Members() == std::vector<int>{0, 1});
}

TEST_CASE("below MIN nodes the round never closes", "[rdzv][round]") {
  FakeCluster c(3, 4);
  c.AddAgents(2);
  c.JoinAll();
  c.Run(c.settings().join_timeout - 1s);
  CHECK(c.generation() == 0);
  CHECK(c.Phase() == "gathering");
  CHECK_FALSE(c.agent(0).ended);
}

TEST_CASE("a node joining during the last call is included in the round", "[rdzv][round]") {
  FakeCluster c(2, 4);
  c.AddAgents(3);
  c.Join(0);
  c.Join(1);
  c.Run(1s);
  c.Join(2);
  CHECK(c.agent(2).waiting);
  CHECK(c.generation() == 0);

  // The window is not extended by the late node: it closes 2 s after MIN.
  c.Run(c.settings().last_call_timeout - 1s);
  c.ExpectNewGeneration();
  CHECK(c.Members() == std::vector<int>{0, 1, 2});
}

TEST_CASE("fewer than MIN nodes for join_timeout end the run as failed", "[rdzv][round]") {
  FakeCluster c(3, 3);
  c.AddAgents(2);
  c.JoinAll();
  c.Run(c.settings().join_timeout - 250ms);
  CHECK_FALSE(c.agent(0).ended);

  c.Run(250ms);
  for (int i : {0, 1}) {
    REQUIRE(c.agent(i).ended);
    CHECK_FALSE(c.agent(i).ended->succeeded);
    CHECK_THAT(c.agent(i).ended->message, Catch::Contains("MIN 3"));
    CHECK_THAT(c.agent(i).ended->message, Catch::Contains("join_timeout 30s"));
  }
  CHECK(c.generation() == 0);
  CHECK(c.Phase() == "ended");
}

TEST_CASE("a second node with a different --nnodes is refused with an error naming both",
          "[rdzv][round]") {
  FakeCluster c(2, 2);
  c.AddAgents(3);
  c.Join(0);
  Join bad = c.MakeJoin(1);
  bad.min_nodes = 3;
  bad.max_nodes = 4;
  c.Send(1, bad);

  const Agent& refused = c.agent(1);
  REQUIRE(refused.errors.size() == 1);
  CHECK(refused.errors[0].fatal);
  CHECK_THAT(refused.errors[0].message, Catch::Contains("3:4") && Catch::Contains("2:2"));
  CHECK(refused.closed == 1);

  // The run goes on with nodes that agree.
  c.Join(2);
  c.ExpectNewGeneration();
  CHECK(c.Members() == std::vector<int>{0, 2});
}

TEST_CASE("a node with a different --max-restarts is refused with an error naming both",
          "[rdzv][round]") {
  // One restart budget for the job: a node counting another is not ignored.
  FakeCluster c(2, 2, /*max_restarts=*/3);
  c.AddAgents(3);
  c.Join(0);
  Join bad = c.MakeJoin(1);
  bad.max_restarts = 5;
  c.Send(1, bad);

  const Agent& refused = c.agent(1);
  REQUIRE(refused.errors.size() == 1);
  CHECK(refused.errors[0].code == ErrorCode::kBadRequest);
  CHECK(refused.errors[0].fatal);
  CHECK(refused.errors[0].message == "--max-restarts 5 differs from run 'job' (3)");
  CHECK(refused.closed == 1);

  c.Join(2);
  c.ExpectNewGeneration();
  CHECK(c.Members() == std::vector<int>{0, 2});
  // A member that comes back with another budget is refused too, not
  // silently held to the run's.
  Join rejoin = c.MakeJoin(2);
  rejoin.max_restarts = 0;
  rejoin.current = c.agent(2).assignment;
  c.Send(2, rejoin);
  REQUIRE(c.agent(2).errors.size() == 1);
  CHECK(c.agent(2).errors[0].message == "--max-restarts 0 differs from run 'job' (3)");
}

TEST_CASE("a run id can be reused once its run has ended", "[rdzv][round]") {
  RendezvousCore core(TestSettings());
  const Time t0{};
  Join first;
  first.run_id = "job";
  first.node_id = "a";
  first.store_addr = "10.0";
  auto actions = core.Handle(MessageEvent{1, first}, t0);
  auto assigned = SentTo<AssignmentMessage>(actions, 1);
  REQUIRE(assigned.size() == 1);
  core.Handle(MessageEvent{1, WorkersSucceeded{"job", "a", 1}}, t0);
  core.Handle(DisconnectEvent{1}, t0);

  // A node still running the old run's workers learns that it is over.
  Join late = first;
  late.node_id = "b";
  late.current = assigned[0].assignment;
  actions = core.Handle(MessageEvent{2, late}, t0 + 1s);
  auto ended = SentTo<RunEnded>(actions, 2);
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].succeeded);

  // A fresh node starts a new run under the same id.
  Join again = first;
  again.node_id = "c";
  actions = core.Handle(MessageEvent{3, again}, t0 + 2s);
  auto fresh = SentTo<AssignmentMessage>(actions, 3);
  REQUIRE(fresh.size() == 1);
  CHECK(fresh[0].assignment.group_rank == 0);
  CHECK(fresh[0].assignment.restart_count == 0);
  CHECK(SentTo<RunEnded>(actions, 3).empty());
}
