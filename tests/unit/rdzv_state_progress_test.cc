// A run's progress as the daemon judges it from heartbeats
// (rendezvous/state/run_state_progress.cc): the slow rank by compute time
// across nodes, and the run's goodput with each generation's standstill.
#include <catch2/catch.hpp>

#include "rdzv_state_test_support.h"

namespace muster::rdzv {
namespace {

using std::chrono::milliseconds;

// Every agent steps 5 times a second and sends its ranks' compute times
// (`compute_us[i]` for agent i) with each heartbeat, every 0.5 s, for
// `how_long`; returns every action.
Actions Train(FakeCluster& c, const std::vector<std::vector<uint64_t>>& compute_us,
              milliseconds how_long) {
  Actions all;
  const Time end = c.now() + how_long;
  while (c.now() < end) {
    for (size_t i = 0; i < compute_us.size(); ++i) {
      Agent& a = c.agent(static_cast<int>(i));
      a.step += 2;
      a.compute_us = compute_us[i];
    }
    for (const Action& a : c.HeartbeatAll()) all.push_back(a);
    for (const Action& a : c.Advance(milliseconds(500))) all.push_back(a);
  }
  return all;
}

// Heart-beating without stepping (importing, or standing still) for `how_long`.
void Idle(FakeCluster& c, milliseconds how_long) {
  const Time end = c.now() + how_long;
  while (c.now() < end) {
    c.HeartbeatAll();
    c.Advance(milliseconds(500));
  }
}

TEST_CASE("the slow rank of a lock-step run is named across nodes, and cleared",
          "[rdzv][progress]") {
  FakeCluster c(2, 2);
  c.AddAgents(2, 2);  // ranks 0, 1 on node0; 2, 3 on node1
  c.JoinAll();
  c.ExpectNewGeneration();

  // Rank 3 takes 2x the others' time per step: every node steps alike.
  Actions actions = Train(c, {{20'000, 21'000}, {20'500, 41'000}}, milliseconds(15'000));
  CHECK(Logged(actions, "event=straggler rank=3 host=host1 compute_ms=41.0 median_ms=20.7"));
  CHECK_FALSE(Logged(actions, "rank=0 "));
  CHECK_FALSE(Logged(actions, "rank=2 "));
  RunStatus run = c.core().Status("job", c.now()).runs.at(0);
  REQUIRE(run.slow_ranks.size() == 1);
  CHECK(run.slow_ranks[0].rank == 3);
  CHECK(run.slow_ranks[0].host == "host1");
  CHECK(*run.slow_ranks[0].compute_ms == Approx(41.0));
  REQUIRE(run.median_compute_ms);
  // The median of four: between the two middle ones (by rate, 20.5 and 21 ms).
  CHECK(*run.median_compute_ms == Approx(20.747).epsilon(0.001));
  CHECK(run.stragglers == 1);
  CHECK(run.nodes[1].straggler);
  CHECK(run.nodes[1].slow_ranks == std::vector<int>{3});
  CHECK(run.nodes[1].compute_ms == std::vector<std::optional<double>>{20.5, 41.0});
  CHECK_FALSE(run.nodes[0].straggler);

  actions = Train(c, {{20'000, 21'000}, {20'500, 21'000}}, milliseconds(5'000));
  CHECK(Logged(actions, "event=straggler_cleared rank=3 host=host1"));
  run = c.core().Status("job", c.now()).runs.at(0);
  CHECK(run.slow_ranks.empty());
  CHECK(run.stragglers == 0);
}

TEST_CASE("ranks that compute alike are not flagged, and a node's extra entries are ignored",
          "[rdzv][progress]") {
  FakeCluster c(3, 3);
  c.AddAgents(3);
  c.JoinAll();
  c.ExpectNewGeneration();
  // Node 2 claims a second rank it does not have, and a slow one: ignored.
  const Actions actions = Train(c, {{30'000}, {31'000}, {29'500, 900'000}}, milliseconds(20'000));
  CHECK_FALSE(Logged(actions, "event=straggler"));
  const RunStatus run = c.core().Status("job", c.now()).runs.at(0);
  CHECK(run.slow_ranks.empty());
  CHECK(run.nodes[2].compute_ms.size() == 1);
}

TEST_CASE("goodput: a run's time to its first step, and each generation's standstill",
          "[rdzv][progress]") {
  FakeCluster c(2, 2, 1);
  c.AddAgents(2);
  c.JoinAll();
  c.ExpectNewGeneration();
  Idle(c, milliseconds(2'000));  // importing, before the first step
  Train(c, {{}, {}}, milliseconds(10'000));
  RunStatus run = c.core().Status("job", c.now()).runs.at(0);
  REQUIRE(run.goodput);
  const double clean = run.goodput->ratio();
  CHECK(clean > 0.7);
  REQUIRE(run.generations.size() == 1);
  REQUIRE(run.generations[0].stood_still);
  CHECK(*run.generations[0].stood_still >= milliseconds(2'000));

  // A worker fails: a new generation, which steps again 3 s later.
  c.Fail(1);
  c.ExpectNewGeneration();
  for (int i = 0; i < 2; ++i) c.agent(i).step = 0;
  Idle(c, milliseconds(3'000));
  Train(c, {{}, {}}, milliseconds(5'000));
  run = c.core().Status("job", c.now()).runs.at(0);
  REQUIRE(run.generations.size() == 2);
  REQUIRE(run.generations[1].stood_still);
  CHECK(*run.generations[1].stood_still >= milliseconds(3'000));
  CHECK(*run.generations[1].stood_still <= milliseconds(5'000));
  REQUIRE(run.goodput);
  CHECK(run.goodput->ratio() < clean);
  CHECK(run.goodput->attempts == 2);
  CHECK(run.goodput->redone > milliseconds(0));  // its steps count from 0 again
}

TEST_CASE("a run without step reports has no goodput and no compute figures", "[rdzv][progress]") {
  FakeCluster c(2, 2);
  c.AddAgents(2);
  c.JoinAll();
  c.ExpectNewGeneration();
  Idle(c, milliseconds(5'000));
  const RunStatus run = c.core().Status("job", c.now()).runs.at(0);
  CHECK_FALSE(run.goodput);
  CHECK_FALSE(run.median_compute_ms);
  CHECK(run.nodes[0].compute_ms.empty());
}

}  // namespace
}  // namespace muster::rdzv
