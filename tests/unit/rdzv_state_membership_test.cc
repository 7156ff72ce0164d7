// A running job's membership: dead nodes (by disconnect or by silence),
// falling below MIN, newcomers, master re-election, rank order and offsets.
#include <catch2/catch.hpp>

#include "tests/unit/rdzv_state_test_support.h"

using namespace muster::rdzv;
using namespace muster::rdzv::testing;
using namespace std::chrono_literals;

namespace {

// A cluster of `n` agents (MIN `min`, MAX `max`) whose first generation has formed.
FakeCluster Running(int min, int max, int n, int max_restarts = 0) {
  FakeCluster c(min, max, max_restarts);
  c.AddAgents(n);
  c.JoinAll();
  if (c.generation() == 0) c.Run(c.settings().last_call_timeout);
  c.ExpectNewGeneration();
  REQUIRE(c.Members().size() == static_cast<size_t>(n));
  return c;
}

}  // namespace

TEST_CASE(
    "a disconnected node is dead after disconnect_grace, not before, and ranks stay contiguous",
    "[rdzv][dead]") {
  FakeCluster c = Running(2, 3, 3);
  c.Disconnect(1);
  c.Advance(c.settings().disconnect_grace - 1ms);
  c.ExpectNoNewGeneration();

  auto actions = c.Advance(1ms);
  CHECK(Logged(actions, "event=node_dead node=node1"));
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.front().generation == 2);
  CHECK(c.Members() == std::vector<int>{0, 2});
  CHECK(c.agent(2).assignment->group_rank == 1);
  CHECK(c.agent(2).assignment->global_rank_offset == 1);
}

TEST_CASE("a node reconnecting within disconnect_grace keeps its place without a new generation",
          "[rdzv][dead]") {
  FakeCluster c = Running(2, 3, 3);
  const Assignment before = *c.agent(1).assignment;
  c.Disconnect(1);
  c.Advance(c.settings().disconnect_grace - 50ms);

  auto actions = c.Rejoin(1);
  auto repeated = SentTo<AssignmentMessage>(actions, c.agent(1).conn);
  REQUIRE(repeated.size() == 1);
  CHECK(repeated[0].assignment == before);

  c.Run(5s);
  c.ExpectNoNewGeneration();
  CHECK(c.Members() == std::vector<int>{0, 1, 2});
}

TEST_CASE("a silent node is dead after heartbeat_timeout, its connection closed, a new generation",
          "[rdzv][dead]") {
  FakeCluster c = Running(2, 3, 3);
  c.HeartbeatAll();
  c.agent(1).silent = true;
  const ConnId silent_conn = c.agent(1).conn;
  const Duration timeout = c.settings().heartbeat_timeout;

  c.Advance(timeout - 250ms);
  c.HeartbeatAll();
  auto actions = c.Advance(250ms);  // exactly heartbeat_timeout of silence: still alive
  CHECK_FALSE(Closes(actions, silent_conn));
  c.ExpectNoNewGeneration();

  actions = c.Advance(1ms);
  CHECK(Closes(actions, silent_conn));
  CHECK(c.agent(1).closed == 1);
  c.ExpectNewGeneration();
  CHECK(c.Members() == std::vector<int>{0, 2});

  // It is gone for good: its late heartbeat is refused.
  actions = c.Heartbeat(1);
  auto errors = SentTo<Error>(actions, c.agent(1).conn);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].code == ErrorCode::kUnknownNode);
}

TEST_CASE("survivors below MIN wait, and a replacement brings the run back in a new generation",
          "[rdzv][dead][below_min]") {
  FakeCluster c = Running(3, 3, 3);
  c.Disconnect(2);
  c.Advance(c.settings().disconnect_grace);
  for (int i : {0, 1}) {
    REQUIRE(c.agent(i).waiting);
    CHECK_THAT(c.agent(i).waiting->reason, Catch::Contains("below --nnodes MIN 3"));
  }
  CHECK(c.Phase() == "gathering");
  c.Run(10s);
  c.ExpectNoNewGeneration();
  CHECK_FALSE(c.agent(0).ended);

  const int replacement = c.AddAgent();
  c.Join(replacement);  // MAX again: the round closes at once
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.front().generation == 2);
  CHECK(c.Members() == std::vector<int>{0, 1, replacement});
}

TEST_CASE("survivors below MIN end the run after join_timeout when nobody comes",
          "[rdzv][dead][below_min]") {
  FakeCluster c = Running(3, 3, 3);
  c.Disconnect(2);
  c.Advance(c.settings().disconnect_grace);
  c.Run(c.settings().join_timeout - 250ms);
  CHECK_FALSE(c.agent(0).ended);

  c.Run(250ms);
  for (int i : {0, 1}) {
    REQUIRE(c.agent(i).ended);
    CHECK_FALSE(c.agent(i).ended->succeeded);
    CHECK_THAT(c.agent(i).ended->message,
               Catch::Contains("MIN 3") && Catch::Contains("join_timeout"));
  }
  c.ExpectNoNewGeneration();
}

TEST_CASE("a node joining a running job waits, then is admitted without counting a restart",
          "[rdzv][newcomer]") {
  FakeCluster c = Running(2, 4, 2, /*max_restarts=*/3);
  const int newcomer = c.AddAgent();
  c.Join(newcomer);
  CHECK(c.agent(newcomer).waiting);
  CHECK_FALSE(c.agent(newcomer).assignment);

  c.Run(c.settings().last_call_timeout - 1ms);
  c.ExpectNoNewGeneration();
  c.Advance(1ms);
  auto gen = c.ExpectNewGeneration();
  CHECK(c.Members() == std::vector<int>{0, 1, newcomer});
  CHECK(gen.front().restart_count == 0);
  CHECK(gen.front().max_restarts == 3);
}

TEST_CASE("a node joining a full job stands by until a member dies", "[rdzv][newcomer]") {
  FakeCluster c = Running(2, 2, 2);
  const int standby = c.AddAgent();
  c.Join(standby);
  REQUIRE(c.agent(standby).waiting);
  CHECK_THAT(c.agent(standby).waiting->reason, Catch::Contains("full"));
  c.Run(5s);
  c.ExpectNoNewGeneration();

  c.Disconnect(0);
  c.Advance(c.settings().disconnect_grace);
  c.ExpectNewGeneration();
  CHECK(c.Members() == std::vector<int>{1, standby});
}

TEST_CASE("a newcomer that vanishes before admission does not restart the members",
          "[rdzv][newcomer]") {
  FakeCluster c = Running(2, 4, 2);
  const int newcomer = c.AddAgent();
  c.Join(newcomer);
  c.Disconnect(newcomer);
  c.Run(c.settings().last_call_timeout + 1s);
  c.ExpectNoNewGeneration();
  CHECK(c.Members() == std::vector<int>{0, 1});
}

TEST_CASE("killing group rank 0 makes the next survivor master with its own store",
          "[rdzv][master]") {
  FakeCluster c = Running(2, 3, 3);
  CHECK(c.agent(0).assignment->master_addr == c.agent(0).store_addr);
  c.Disconnect(0);
  c.Advance(c.settings().disconnect_grace);

  auto gen = c.ExpectNewGeneration();
  CHECK(c.Members() == std::vector<int>{1, 2});
  CHECK(gen.front().master_addr == c.agent(1).store_addr);
  CHECK(gen.front().master_port == c.agent(1).store_port);
  CHECK(c.agent(2).assignment->master_addr == c.agent(1).store_addr);
}

TEST_CASE("survivors keep their relative order and newcomers follow in join order",
          "[rdzv][order]") {
  FakeCluster c(1, 8);
  c.AddAgents(7);
  for (int i : {3, 1, 0, 2}) c.Join(i);
  c.Run(c.settings().last_call_timeout);
  c.ExpectNewGeneration();
  CHECK(c.Members() == std::vector<int>{3, 1, 0, 2});

  c.Disconnect(1);
  c.Advance(c.settings().disconnect_grace);
  c.ExpectNewGeneration();
  CHECK(c.Members() == std::vector<int>{3, 0, 2});

  c.Join(5);
  c.Join(4);
  c.Run(c.settings().last_call_timeout);
  c.ExpectNewGeneration();
  CHECK(c.Members() == std::vector<int>{3, 0, 2, 5, 4});

  c.Disconnect(3);  // the master
  c.Advance(c.settings().disconnect_grace);
  c.ExpectNewGeneration();
  CHECK(c.Members() == std::vector<int>{0, 2, 5, 4});

  c.Join(6);
  c.Run(c.settings().last_call_timeout);
  c.ExpectNewGeneration();
  CHECK(c.Members() == std::vector<int>{0, 2, 5, 4, 6});
}

TEST_CASE("global rank offsets are prefix sums of heterogeneous local_world_size",
          "[rdzv][offsets]") {
  FakeCluster c(2, 3);
  c.AddAgent(4);
  c.AddAgent(2);
  c.AddAgent(8);
  c.JoinAll();
  auto gen = c.ExpectNewGeneration();
  CHECK(gen[0].global_rank_offset == 0);
  CHECK(gen[1].global_rank_offset == 4);
  CHECK(gen[2].global_rank_offset == 6);
  CHECK(gen[0].world_size == 14);

  c.Disconnect(1);
  c.Advance(c.settings().disconnect_grace);
  gen = c.ExpectNewGeneration();
  REQUIRE(gen.size() == 2);
  CHECK(gen[1].local_world_size == 8);
  CHECK(gen[1].global_rank_offset == 4);
  CHECK(gen[0].world_size == 12);
}

TEST_CASE("a thousand nodes join, one dies, and one new generation keeps ranks contiguous",
          "[rdzv][scale]") {
  constexpr int kNodes = 1000;
  FakeCluster c(kNodes / 2, kNodes);
  c.AddAgents(kNodes, 2);
  c.JoinAll();
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.size() == kNodes);
  CHECK(gen.front().world_size == 2 * kNodes);
  c.HeartbeatAll();

  c.Disconnect(500);
  c.Advance(c.settings().disconnect_grace);
  gen = c.ExpectNewGeneration();
  CHECK(gen.front().generation == 2);
  CHECK(gen.size() == kNodes - 1);
  CHECK(gen.front().world_size == 2 * (kNodes - 1));
  CHECK(c.agent(501).assignment->group_rank == 500);
  c.Run(3s);
  CHECK(c.generation() == 2);
}

TEST_CASE("a node that joins after the last scan of the nodes is still found silent in time",
          "[rdzv][dead]") {
  // The daemon skips its scan of the nodes until the earliest deadline it
  // knows. Here the scan found no node at all (the only one died), so only the
  // newcomer's own deadline can bring the next scan.
  FakeCluster c(2, 3);
  c.AddAgents(2);
  c.Join(0);
  c.Disconnect(0);
  c.Run(c.settings().disconnect_grace + 1ms);
  c.Run(c.settings().heartbeat_timeout);  // scans with no node left

  c.Join(1);
  c.agent(1).silent = true;
  const ConnId conn = c.agent(1).conn;
  c.Advance(c.settings().heartbeat_timeout);
  CHECK(c.agent(1).closed == 0);
  CHECK(Closes(c.Advance(1ms), conn));
}

TEST_CASE("a node that re-joined on a new connection outlives the close of its old one",
          "[rdzv][dead]") {
  FakeCluster c = Running(2, 3, 3);
  // The agent reconnects before the daemon has seen its old connection close.
  const ConnId old_conn = c.agent(1).conn;
  c.agent(1).conn = 0;
  auto actions = c.Rejoin(1);
  CHECK(Closes(actions, old_conn));
  REQUIRE(c.agent(1).conn != old_conn);

  actions = c.core().Handle(DisconnectEvent{old_conn}, c.now());
  CHECK_FALSE(Logged(actions, "event=disconnect"));
  c.Run(5s);
  c.ExpectNoNewGeneration();
  CHECK(c.Members() == std::vector<int>{0, 1, 2});

  // Its new connection is the one that counts.
  actions = c.Disconnect(1);
  CHECK(Logged(actions, "event=disconnect node=node1"));
  actions = c.Advance(c.settings().disconnect_grace);
  CHECK(Logged(actions, "event=node_dead node=node1"));
  c.ExpectNewGeneration();
  CHECK(c.Members() == std::vector<int>{0, 2});
}
