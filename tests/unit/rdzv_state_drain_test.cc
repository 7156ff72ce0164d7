// Draining: a generation that ends has its members' workers stopped before
// the next generation starts anywhere, so two generations' workers never run
// at once. Members say their workers are gone by a heartbeat for another
// generation; dying, leaving and reporting an outcome count too.
#include <catch2/catch.hpp>

#include "tests/unit/rdzv_state_test_support.h"

using namespace muster::rdzv;
using namespace muster::rdzv::testing;
using namespace std::chrono_literals;

namespace {

FakeCluster RunningNodes(int nodes, int min_nodes) { return RunningCluster(min_nodes, nodes, 5); }

}  // namespace

TEST_CASE("after a worker failure the next generation waits until the other members stopped",
          "[rdzv][drain]") {
  FakeCluster c = RunningNodes(3, 3);
  c.agent(2).silent = true;  // it gets Waiting but takes its time to stop
  auto out = c.Fail(0);
  CHECK(Logged(out, "event=draining gen=1 nodes=2"));
  CHECK(SentTo<Waiting>(out, c.agent(1).conn).size() == 1);
  CHECK(SentTo<Waiting>(out, c.agent(2).conn).size() == 1);
  CHECK(CountSent<AssignmentMessage>(out) == 0);  // node 2 still runs generation 1
  c.ExpectNoNewGeneration();

  // Its heartbeat while still stopping (generation 1) changes nothing...
  c.agent(2).running = 1;
  out = c.Heartbeat(2);
  CHECK(CountSent<AssignmentMessage>(out) == 0);
  // ...the one after its workers are gone starts generation 2.
  c.agent(2).running = 0;
  out = c.Heartbeat(2);
  CHECK(CountSent<AssignmentMessage>(out) == 3);
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.front().generation == 2);
  CHECK(gen.front().restart_count == 1);
}

TEST_CASE("a member that dies while draining is not waited for", "[rdzv][drain]") {
  FakeCluster c = RunningNodes(3, 2);
  c.agent(2).silent = true;
  c.Fail(0);
  c.ExpectNoNewGeneration();
  c.Disconnect(2);
  c.Advance(c.settings().disconnect_grace);
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.size() == 2);
}

TEST_CASE("a failure reported while draining ends the same generation, not another restart",
          "[rdzv][drain]") {
  FakeCluster c = RunningNodes(2, 2);
  c.agent(1).silent = true;
  c.Fail(0);
  auto out = c.Fail(1);  // its workers failed while being stopped
  CHECK(SentTo<Error>(out, c.agent(1).conn).empty());
  auto gen = c.ExpectNewGeneration();
  CHECK(gen.front().restart_count == 1);
}

TEST_CASE("a drain that gets no answer ends after its timeout with a warning", "[rdzv][drain]") {
  FakeCluster c = RunningNodes(2, 2);
  c.agent(1).silent = true;
  c.Fail(0);
  // The silent agent is still alive as far as the daemon knows: keep it so.
  Actions out;
  for (int i = 0; i < 100 && c.generation() == 1; ++i) {
    c.agent(1).silent = false;
    c.agent(1).running = 1;
    c.Heartbeat(1);
    c.agent(1).silent = true;
    c.Heartbeat(0);
    out = c.Advance(500ms);
  }
  CHECK(Logged(out, "event=drain_timeout gen=1 nodes=node1"));
  CHECK(c.generation() == 2);
}

TEST_CASE("a member that rejoins without workers while draining counts as stopped",
          "[rdzv][drain]") {
  FakeCluster c = RunningNodes(2, 2);
  c.agent(1).silent = true;
  c.Fail(0);
  c.ExpectNoNewGeneration();
  c.Disconnect(1);
  c.agent(1).running = 0;
  auto out = c.Send(1, c.MakeJoin(1));  // reconnected, no workers running
  CHECK(SentTo<Waiting>(out, c.agent(1).conn).size() == 1);
  c.ExpectNewGeneration();
}
