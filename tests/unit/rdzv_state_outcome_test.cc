// Worker outcomes: failures restart the job (counted once per generation,
// up to max_restarts), success ends it, and reports about older generations
// are refused as stale.
#include <catch2/catch.hpp>

#include "tests/unit/rdzv_state_test_support.h"

using namespace muster::rdzv;
using namespace muster::rdzv::testing;
using namespace std::chrono_literals;

namespace {

FakeCluster Running(int nodes, int max_restarts) {
  return RunningCluster(nodes, nodes, max_restarts);
}

}  // namespace

TEST_CASE("worker outcomes reported for an old generation are refused as stale and change nothing",
          "[rdzv][stale]") {
  FakeCluster c = Running(2, 3);
  c.Fail(0);
  auto gen = c.ExpectNewGeneration();
  REQUIRE(gen.front().generation == 2);
  REQUIRE(gen.front().restart_count == 1);

  auto actions = c.FailAt(1, 1);
  auto errors = SentTo<Error>(actions, c.agent(1).conn);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].code == ErrorCode::kStaleGeneration);
  CHECK_FALSE(errors[0].fatal);
  CHECK(CountSent<AssignmentMessage>(actions) == 0);

  for (int i : {0, 1}) {
    actions = c.SucceedAt(i, 1);
    errors = SentTo<Error>(actions, c.agent(i).conn);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].code == ErrorCode::kStaleGeneration);
    CHECK(CountSent<RunEnded>(actions) == 0);
  }
  CHECK(c.Phase() == "running");

  // Nothing moved: a heartbeat still sees generation 2 with one restart.
  c.agent(0).assignment.reset();  // as if it missed the assignment: ask again
  c.agent(0).running = 0;
  c.Heartbeat(0);
  REQUIRE(c.agent(0).assignment);
  CHECK(c.agent(0).assignment->generation == 2);
  CHECK(c.agent(0).assignment->restart_count == 1);
  c.ExpectNoNewGeneration();
}

TEST_CASE("a heartbeat with an old generation gets the current assignment repeated",
          "[rdzv][stale]") {
  FakeCluster c = Running(2, 3);
  c.Fail(0);
  c.ExpectNewGeneration();
  const Assignment current = *c.agent(1).assignment;

  auto actions = c.Send(1, Heartbeat{FakeCluster::kRunId, "node1", 1, 0, {}});
  auto repeated = SentTo<AssignmentMessage>(actions, c.agent(1).conn);
  REQUIRE(repeated.size() == 1);
  CHECK(repeated[0].assignment == current);

  c.Advance(500ms);          // acks are spaced by a third of fence_timeout
  actions = c.Heartbeat(1);  // now current
  auto acks = SentTo<HeartbeatAck>(actions, c.agent(1).conn);
  REQUIRE(acks.size() == 1);
  CHECK(acks[0].generation == 2);
  c.ExpectNoNewGeneration();
}

TEST_CASE("heartbeats are acknowledged at most every third of fence_timeout", "[rdzv][ack]") {
  FakeCluster c = Running(2, 1);
  c.Advance(500ms);
  CHECK(SentTo<HeartbeatAck>(c.Heartbeat(0), c.agent(0).conn).size() == 1);
  c.Advance(250ms);  // 250 ms < 1 s / 3: no ack yet, but the heartbeat still counts
  CHECK(SentTo<HeartbeatAck>(c.Heartbeat(0), c.agent(0).conn).empty());
  c.Advance(250ms);
  CHECK(SentTo<HeartbeatAck>(c.Heartbeat(0), c.agent(0).conn).size() == 1);
  c.ExpectNoNewGeneration();
}

TEST_CASE("worker failures on two nodes of one generation count as one restart",
          "[rdzv][restarts]") {
  FakeCluster c = Running(3, 2);
  c.Fail(0);
  c.ExpectNewGeneration();

  auto actions = c.FailAt(1, 1);  // the same incident, seen from another node
  auto errors = SentTo<Error>(actions, c.agent(1).conn);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].code == ErrorCode::kStaleGeneration);
  c.ExpectNoNewGeneration();
  for (int i = 0; i < 3; ++i) {
    CHECK(c.agent(i).assignment->generation == 2);
    CHECK(c.agent(i).assignment->restart_count == 1);
  }
}

TEST_CASE("restarts beyond max_restarts end the run as failed, the count in every assignment",
          "[rdzv][restarts]") {
  FakeCluster c = Running(3, 2);
  CHECK(c.agent(0).assignment->restart_count == 0);
  CHECK(c.agent(0).assignment->max_restarts == 2);

  for (int restart = 1; restart <= 2; ++restart) {
    c.Fail(restart);
    auto gen = c.ExpectNewGeneration();
    for (const Assignment& a : gen) {
      CHECK(a.restart_count == restart);
      CHECK(a.max_restarts == 2);
    }
  }

  auto actions = c.Fail(0, 7);
  CHECK(CountSent<AssignmentMessage>(actions) == 0);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(c.agent(i).ended);
    CHECK_FALSE(c.agent(i).ended->succeeded);
    CHECK_THAT(c.agent(i).ended->message,
               Catch::Contains("exit code 7") && Catch::Contains("no restarts left (2 of 2 used)"));
  }
  CHECK(c.Phase() == "ended");
}

TEST_CASE("the run succeeds when every member's workers succeeded", "[rdzv][success]") {
  FakeCluster c = Running(3, 0);
  CHECK(CountSent<RunEnded>(c.Succeed(0)) == 0);
  CHECK(CountSent<RunEnded>(c.Succeed(1)) == 0);
  CHECK(c.Phase() == "running");

  auto actions = c.Succeed(2);
  CHECK(CountSent<RunEnded>(actions) == 3);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(c.agent(i).ended);
    CHECK(c.agent(i).ended->succeeded);
  }
  CHECK(c.Phase() == "ended");
}

TEST_CASE("a node reporting success twice counts once", "[rdzv][success]") {
  FakeCluster c = Running(3, 0);
  CHECK(CountSent<RunEnded>(c.Succeed(0)) == 0);
  CHECK(CountSent<RunEnded>(c.Succeed(0)) == 0);
  CHECK(CountSent<RunEnded>(c.Succeed(1)) == 0);
  CHECK(c.Phase() == "running");
  CHECK(CountSent<RunEnded>(c.Succeed(2)) == 3);
  CHECK(c.Phase() == "ended");
}

TEST_CASE("successes in an older generation do not count toward the next", "[rdzv][success]") {
  FakeCluster c = Running(2, 1);
  CHECK(CountSent<RunEnded>(c.Succeed(0)) == 0);
  c.Fail(1);
  c.ExpectNewGeneration();
  CHECK(CountSent<RunEnded>(c.Succeed(1)) == 0);
  CHECK(c.Phase() == "running");
  CHECK(CountSent<RunEnded>(c.Succeed(0)) == 2);
  CHECK(c.Phase() == "ended");
}

TEST_CASE("a success report from a node the run does not know is refused as an unknown node",
          "[rdzv][success]") {
  FakeCluster c(2, 2);
  c.AddAgents(3);
  c.Join(0);
  c.Join(1);
  c.ExpectNewGeneration();

  auto actions = c.SucceedAt(2, 1);  // node2 never joined
  auto errors = SentTo<Error>(actions, c.agent(2).conn);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].code == ErrorCode::kUnknownNode);
  CHECK_THAT(errors[0].message, Catch::Contains("node2"));
  CHECK_FALSE(errors[0].fatal);
  CHECK(CountSent<RunEnded>(actions) == 0);
  CHECK(c.Phase() == "running");
}

TEST_CASE("a success report after the run ended changes nothing", "[rdzv][success]") {
  FakeCluster c = Running(2, 0);
  c.Succeed(0);
  REQUIRE(CountSent<RunEnded>(c.Succeed(1)) == 2);
  REQUIRE(c.Phase() == "ended");
  c.Advance(RendezvousCore::kEndedRunRetention - 1s);

  // The report that ended the run, repeated: only its sender hears the outcome again.
  auto actions = c.Succeed(1);
  CHECK_FALSE(Logged(actions, "event=run_ended"));
  CHECK(SentTo<RunEnded>(actions, c.agent(0).conn).empty());
  auto ended = SentTo<RunEnded>(actions, c.agent(1).conn);
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].succeeded);
  CHECK(SentTo<Error>(actions, c.agent(1).conn).empty());

  // The run is still forgotten on the schedule of its first end.
  c.Advance(1s);
  CHECK(c.Phase() == "forgotten");
}

TEST_CASE("acks of one generation share one encoded frame, new with each generation",
          "[rdzv][ack]") {
  FakeCluster c = Running(2, 1);
  c.Advance(500ms);
  auto frame_of = [](const Actions& actions) {
    std::shared_ptr<const std::string> frame;
    for (const Action& action : actions) {
      if (const auto* f = std::get_if<SendFrameAction>(&action)) frame = f->frame;
    }
    return frame;
  };
  const auto first = frame_of(c.Heartbeat(0));
  const auto second = frame_of(c.Heartbeat(1));
  REQUIRE(first != nullptr);
  CHECK(first == second);
  REQUIRE(c.agent(0).acks.size() == 1);
  CHECK(c.agent(0).acks.back() == HeartbeatAck{FakeCluster::kRunId, 1});

  c.Fail(0);
  c.ExpectNewGeneration();
  c.Advance(500ms);
  const auto next = frame_of(c.Heartbeat(0));
  REQUIRE(next != nullptr);
  CHECK(next != first);
  REQUIRE(c.agent(0).acks.size() == 2);
  CHECK(c.agent(0).acks.back() == HeartbeatAck{FakeCluster::kRunId, 2});
}
