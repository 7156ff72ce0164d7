// The status snapshot a StatusRequest gets: which runs, which nodes, in
// which order, with what each shows. (Its JSON form and the bound on its
// frame are the daemon's: rdzv_daemon_status_reply_test.cc.)
#include <catch2/catch.hpp>

#include "tests/unit/rdzv_state_test_support.h"

using namespace muster::rdzv;
using namespace muster::rdzv::testing;

namespace {

// The connection a status client asks on: it joins no run.
constexpr ConnId kStatusConn = 1;

// The snapshots `actions` hands the shell to answer `conn` with.
std::vector<StatusSnapshot> StatusRepliesTo(const Actions& actions, ConnId conn) {
  std::vector<StatusSnapshot> found;
  for (const Action& action : actions) {
    const auto* reply = std::get_if<StatusReplyAction>(&action);
    if (reply != nullptr && reply->conn == conn) found.push_back(reply->snapshot);
  }
  return found;
}

}  // namespace

TEST_CASE("a status request is answered with a snapshot of the run it names, or of every run",
          "[rdzv][status]") {
  FakeCluster c(2, 3);
  c.AddAgents(2);
  c.JoinAll();
  Join other = c.MakeJoin(0);
  other.run_id = "other";
  c.core().Handle(MessageEvent{900, other}, c.now());

  auto named = StatusRepliesTo(
      c.core().Handle(MessageEvent{kStatusConn, StatusRequest{"job"}}, c.now()), kStatusConn);
  REQUIRE(named.size() == 1);
  REQUIRE(named[0].runs.size() == 1);
  CHECK(named[0].runs[0].run_id == "job");
  CHECK(named[0].runs[0].phase == RunPhase::kLastCall);
  CHECK(named[0].runs[0].nodes.size() == 2);

  auto every = StatusRepliesTo(
      c.core().Handle(MessageEvent{kStatusConn, StatusRequest{""}}, c.now()), kStatusConn);
  REQUIRE(every.size() == 1);
  REQUIRE(every[0].runs.size() == 2);
  CHECK(every[0].runs[0].run_id == "job");  // by run id
  CHECK(every[0].runs[1].run_id == "other");

  auto unknown = StatusRepliesTo(
      c.core().Handle(MessageEvent{kStatusConn, StatusRequest{"nope"}}, c.now()), kStatusConn);
  REQUIRE(unknown.size() == 1);
  CHECK(unknown[0].runs.empty());
}

TEST_CASE("status lists members by group rank with their global ranks, then waiting nodes by id",
          "[rdzv][status]") {
  FakeCluster c(2, 2);
  c.AddAgent(2);
  c.AddAgent(3);
  c.JoinAll();
  c.ExpectNewGeneration();
  c.AddAgents(2);
  c.Join(3);  // standing by: the run is full
  c.Join(2);
  c.Advance(Duration(200));
  c.Heartbeat(1);
  c.Disconnect(0);

  const RunStatus run = c.core().Status("job", c.now()).runs.at(0);
  CHECK(run.phase == RunPhase::kRunning);
  CHECK(run.generation == 1);
  CHECK_FALSE(run.outcome.has_value());
  REQUIRE(run.nodes.size() == 4);
  CHECK(run.nodes[0].node_id == "node0");
  CHECK(run.nodes[0].member);
  CHECK(run.nodes[0].group_rank == 0);
  CHECK(run.nodes[0].global_rank_offset == 0);
  CHECK_FALSE(run.nodes[0].connected);
  CHECK(run.nodes[0].heartbeat_age == std::chrono::milliseconds(200));
  CHECK(run.nodes[1].node_id == "node1");
  CHECK(run.nodes[1].group_rank == 1);
  CHECK(run.nodes[1].global_rank_offset == 2);
  CHECK(run.nodes[1].local_world_size == 3);
  CHECK(run.nodes[1].heartbeat_age == std::chrono::milliseconds(0));
  CHECK(run.nodes[2].node_id == "node2");
  CHECK_FALSE(run.nodes[2].member);
  CHECK(run.nodes[2].group_rank == -1);
  CHECK(run.nodes[3].node_id == "node3");
  CHECK(run.nodes[3].connected);
}

TEST_CASE("an ended run's status says how it ended", "[rdzv][status]") {
  FakeCluster c = RunningCluster(1, 1, 0);
  c.Succeed(0);
  const RunStatus run = c.core().Status("job", c.now()).runs.at(0);
  CHECK(run.phase == RunPhase::kEnded);
  REQUIRE(run.outcome.has_value());
  CHECK(run.outcome->succeeded);
  CHECK(run.outcome->message == "every worker succeeded");
}
