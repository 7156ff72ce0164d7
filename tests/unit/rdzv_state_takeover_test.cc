// A replica taking the lead (RendezvousCore's Takeover): the run records it
// read from etcd, and the hold on rebuilds until agents that did not come
// back have fenced themselves.
#include <catch2/catch.hpp>

#include "rendezvous/state/takeover_hold.h"
#include "tests/unit/rdzv_state_test_support.h"

using namespace muster::rdzv;
using namespace muster::rdzv::testing;
using namespace std::chrono_literals;

TEST_CASE("a run's record is what a leader keeps of it", "[rdzv][takeover]") {
  FakeCluster c = AtGeneration2AfterOneRestart(2);
  const RunRecord record = c.Records().at(FakeCluster::kRunId);
  CHECK(record == RunRecord{.run_id = "job",
                            .generation = 2,
                            .restart_count = 1,
                            .max_restarts = 3,
                            .min_nodes = 2,
                            .max_nodes = 3,
                            .ended = false});
}

TEST_CASE("agents without workers keep their restarts and never see a generation again",
          "[rdzv][takeover]") {
  FakeCluster c = AtGeneration2AfterOneRestart(2);
  auto records = c.Records();
  // Every agent lost its workers, and the leader: they join the new one
  // without an assignment. (The cluster checks that no agent is handed a
  // generation number it has seen before.)
  c.TakeOver({.rebuild_hold_until = std::nullopt, .records = records});
  c.JoinAll();
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.front().generation == 3);
  CHECK(gen.front().restart_count == 1);
  CHECK(gen.front().max_restarts == 3);
}

TEST_CASE("agents that run workers are the truth: the record adds no restart", "[rdzv][takeover]") {
  FakeCluster c = AtGeneration2AfterOneRestart(2);
  auto records = c.Records();
  // The old leader counted a failure it never formed a generation for: its
  // record is one ahead of what the agents run. The failure is reported
  // again to the new leader, which counts it once.
  records.at("job").restart_count = 2;
  records.at("job").generation = 2;
  c.TakeOver({.rebuild_hold_until = std::nullopt, .records = records});
  for (int i = 0; i < 3; ++i) c.Rejoin(i);
  c.ExpectNoNewGeneration();
  CHECK(c.Phase() == "running");
  c.Fail(2);
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.front().generation == 3);
  CHECK(gen.front().restart_count == 2);
}

TEST_CASE("an ended run's record is no budget for a new run of the same id", "[rdzv][takeover]") {
  FakeCluster c(2, 3, /*max_restarts=*/3);
  c.AddAgents(3);
  c.TakeOver({.rebuild_hold_until = std::nullopt,
              .records = {{"job", RunRecord{.run_id = "job",
                                            .generation = 5,
                                            .restart_count = 3,
                                            .max_restarts = 3,
                                            .min_nodes = 2,
                                            .max_nodes = 3,
                                            .ended = true}}}});
  c.JoinAll();
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.front().generation == 1);
  CHECK(gen.front().restart_count == 0);
}

TEST_CASE("a new leader holds the rebuild until the hold, not close_timeout", "[rdzv][takeover]") {
  FakeCluster c = AtGeneration2AfterOneRestart(2);
  const auto hold = c.now() + 2'400ms;
  c.TakeOver({.rebuild_hold_until = hold, .records = c.Records()});
  c.Rejoin(0);
  c.Rejoin(2);  // agent 1 never comes back
  c.Run(2'400ms - 1ms);
  c.ExpectNoNewGeneration();
  CHECK(c.Phase() == "rebuilding");
  c.Advance(1ms);
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.front().generation == 3);
  CHECK(c.Members() == std::vector<int>{0, 2});
}

TEST_CASE("a hold already past leaves close_timeout", "[rdzv][takeover]") {
  FakeCluster c = AtGeneration2AfterOneRestart(2);
  const auto hold = c.now() + 100ms;
  c.TakeOver({.rebuild_hold_until = hold, .records = {}});
  c.Advance(200ms);
  c.Rejoin(0);
  c.Rejoin(2);
  c.Run(c.settings().close_timeout - 1ms);
  c.ExpectNoNewGeneration();
  c.Advance(1ms);
  c.ExpectNewGeneration();
}

TEST_CASE("the hold is the shorter of the two bounds an agent fences by", "[rdzv][takeover]") {
  Settings s;  // fence_timeout 1 s, failover_timeout 3.5 s
  // A current standby answer predates the lead by under 0.4 s; fence_timeout
  // after it, plus the slack, every agent kept by it has fenced.
  CHECK(TakeoverHold(s, 600ms) == 1500ms);
  // A failover_timeout barely over fence_timeout makes the lead margin bound
  // the shorter one.
  s.failover_timeout = 1200ms;
  CHECK(TakeoverHold(s, 600ms) == 600ms);
  s.failover_timeout = 3500ms;
  s.fence_timeout = 3000ms;
  CHECK(TakeoverHold(s, 600ms) == 2900ms);
}
