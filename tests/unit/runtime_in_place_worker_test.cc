// InPlaceWorker against a fake agent: the agent's two pipes are real
// (pipe2), named to the worker through a fake environment as muster names
// them (MUSTER_CONTROL_FD, MUSTER_PROGRESS_FD). The agent writes its lines
// ahead (the pipe keeps them) and reads what the worker said. Generations
// have one rank (a Gloo world of one needs no store and no socket); forming
// a bigger one is the integration tests' (recovery_in_place).
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/launcher_test_support.h"
#include "tests/unit/runtime_pipe_test_support.h"
#include "worker_runtime/recovery/in_place_worker.h"

namespace Catch {
template <>
struct StringMaker<muster::runtime::Verdict> {
  static std::string convert(const muster::runtime::Verdict& v) {
    switch (v.kind()) {
      case muster::runtime::Verdict::Kind::kGoOn:
        return "go on";
      case muster::runtime::Verdict::Kind::kLeave:
        return "leave";
      case muster::runtime::Verdict::Kind::kExit:
        return "exit " + std::to_string(v.exit_code());
    }
    return "?";
  }
};
}  // namespace Catch

namespace muster::runtime {
namespace {

using muster::testing::EnvOf;
using muster::testing::Pipe;
using namespace std::chrono_literals;

constexpr const char* kJoin4 =
    "join 4 RANK=0 WORLD_SIZE=1 GROUP_RANK=0 LOCAL_RANK=0 MASTER_ADDR=10.0.0.2 "
    "MASTER_PORT=29600 STORE_PREFIX=muster/4/\n";
constexpr const char* kJoin5 =
    "join 5 RANK=0 WORLD_SIZE=1 GROUP_RANK=0 LOCAL_RANK=0 MASTER_ADDR=10.0.0.2 "
    "MASTER_PORT=29600 STORE_PREFIX=muster/5/\n";

// muster's side of the channel: it writes `from_agent`, reads `to_agent`.
struct FakeAgent {
  Pipe from_agent;
  Pipe to_agent;
  std::vector<std::string> log;  // the worker's log lines

  ControlChannel Channel() const {
    return ControlChannel::FromEnv(
        EnvOf({{"MUSTER_CONTROL_FD", std::to_string(from_agent.read_end)},
               {"MUSTER_PROGRESS_FD", std::to_string(to_agent.write_end)}}));
  }
  void Send(const std::string& lines) const { from_agent.Write(lines); }
  // What the worker said since the last call.
  std::string Heard() const { return to_agent.Drain(); }
  bool Logged(const std::string& text) const {
    for (const std::string& line : log) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

  InPlaceWorker Start(Context ctx = {}, std::chrono::milliseconds timeout = 5000ms) {
    return InPlaceWorker::Start(ctx,
                                {.backend = Backend::kGloo,
                                 .timeout = timeout,
                                 .store_key_prefix = "train/",
                                 .log = [this](const std::string& line) { log.push_back(line); }},
                                Channel());
  }
};

// Steps until the worker says to stop stepping; the watch runs on a thread
// of its own, so a message just written may take a moment to be noticed.
Verdict PollUntilNotGoingOn(InPlaceWorker& worker) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    Verdict v = worker.Poll();
    if (!v.goes_on()) return v;
    std::this_thread::sleep_for(1ms);
  }
  return Verdict::GoOn();
}

TEST_CASE("a worker muster recovers in place says hello") {
  FakeAgent agent;
  InPlaceWorker worker = agent.Start();
  CHECK(worker.in_place());
  CHECK(agent.Heard() == "hello 1 in-place\n");
}

TEST_CASE("a worker whose rank 0 serves the store says nothing and is not in place") {
  FakeAgent agent;
  Context ctx;
  ctx.rank0_hosts_store = true;
  InPlaceWorker worker = agent.Start(ctx);
  CHECK_FALSE(worker.in_place());
  CHECK(agent.Heard().empty());
}

TEST_CASE("without muster's pipes a worker is not in place") {
  InPlaceWorker worker = InPlaceWorker::Start(
      Context{}, {.backend = Backend::kGloo, .log = [](const std::string&) {}}, ControlChannel());
  CHECK_FALSE(worker.in_place());
  CHECK(worker.membership().store_prefix == "muster/0/");
  CHECK_FALSE(worker.membership().joining);
}

TEST_CASE("a pause between steps leaves the generation and is answered with ready") {
  FakeAgent agent;
  InPlaceWorker worker = agent.Start();
  REQUIRE(worker.Form().goes_on());
  CHECK(worker.comm().world_size() == 1);
  CHECK(worker.Poll() == Verdict::GoOn());  // nothing written: no leave
  CHECK(worker.Joined().goes_on());         // the first generation: nothing to answer
  agent.Send("pause 3\n");
  CHECK(PollUntilNotGoingOn(worker) == Verdict::Leave());
  CHECK(agent.Heard() == "hello 1 in-place\n");  // ready comes with AwaitJoin, not before

  agent.Send(kJoin4);
  CHECK(worker.AwaitJoin() == Verdict::GoOn());
  CHECK(agent.Heard() == "ready 3\n");
}

TEST_CASE("a join gives the next generation's membership, answered with joined once formed") {
  FakeAgent agent;
  Context ctx;
  ctx.generation = 2;
  ctx.run_id = "job";
  InPlaceWorker worker = agent.Start(ctx);
  REQUIRE(worker.Form().goes_on());
  agent.Send(std::string("pause 3\n") + kJoin4);
  REQUIRE(PollUntilNotGoingOn(worker).leaves());
  REQUIRE(worker.AwaitJoin().goes_on());

  const Membership& m = worker.membership();
  CHECK(m.joining == 4u);
  CHECK(m.store_prefix == "muster/4/");
  CHECK(m.ctx.rank == 0);
  CHECK(m.ctx.world_size == 1);
  CHECK(m.ctx.master_addr == "10.0.0.2");
  CHECK(m.ctx.master_port == 29600);
  CHECK(m.ctx.run_id == "job");  // not the join's to change
  CHECK(m.ctx.generation == 2);

  REQUIRE(worker.Form().goes_on());
  agent.Heard();
  CHECK(worker.Joined().goes_on());
  CHECK(agent.Heard() == "joined 4\n");
  CHECK_FALSE(worker.membership().joining);
  CHECK(worker.Joined().goes_on());  // answered once
  CHECK(agent.Heard().empty());
}

TEST_CASE("a join moves every field of the membership the protocol names") {
  Context ctx;
  ctx.rank = 3;
  ctx.world_size = 4;
  ctx.local_rank = 1;
  ctx.local_world_size = 2;
  ctx.generation = 7;
  const Membership first = Membership::Initial(ctx);
  CHECK(first.store_prefix == "muster/7/");
  const Membership next = first.Joining({.generation = 9,
                                         .rank = 1,
                                         .world_size = 3,
                                         .group_rank = 0,
                                         .local_rank = 0,
                                         .master_addr = "n2",
                                         .master_port = 4000,
                                         .store_prefix = "muster/8/"});
  CHECK(next.joining == 9u);
  CHECK(next.store_prefix == "muster/8/");
  CHECK(next.ctx.rank == 1);
  CHECK(next.ctx.world_size == 3);
  CHECK(next.ctx.local_rank == 0);
  CHECK(next.ctx.master_addr == "n2");
  CHECK(next.ctx.master_port == 4000);
  CHECK(next.ctx.local_world_size == 2);  // join does not carry it
  CHECK(next.ctx.generation == 7);
}

TEST_CASE("after a failed collective the worker waits for muster's pause, then joins") {
  FakeAgent agent;
  InPlaceWorker worker = agent.Start();
  REQUIRE(worker.Form().goes_on());
  CHECK(worker.LeaveAfter(CommError(CommError::Kind::kPeerFailed, "rank 1 is gone")) ==
        Verdict::Leave());
  CHECK(agent.Logged(
      "a collective failed (rank 0): rank 1 is gone; waiting for muster to recover in place"));
  agent.Send(std::string("pause 3\n") + kJoin4);
  CHECK(worker.AwaitJoin() == Verdict::GoOn());
  CHECK(agent.Heard() == "hello 1 in-place\nready 3\n");
}

TEST_CASE("a join before any pause is answered with failed and the worker exits") {
  FakeAgent agent;
  InPlaceWorker worker = agent.Start();
  REQUIRE(worker.Form().goes_on());
  REQUIRE(worker.Leave("the peer hung up").leaves());
  agent.Send(kJoin4);
  CHECK(worker.AwaitJoin() == Verdict::Exit(kExitCommFailure));
  CHECK(agent.Heard() == "hello 1 in-place\nfailed 4 join before pause\n");
  CHECK(agent.Logged("muster sent join before pause"));
}

TEST_CASE("a stop between steps exits") {
  FakeAgent agent;
  InPlaceWorker worker = agent.Start();
  REQUIRE(worker.Form().goes_on());
  agent.Send("stop\n");
  CHECK(PollUntilNotGoingOn(worker) == Verdict::Exit(kExitCommFailure));
  CHECK(agent.Logged("stopped by muster"));
}

TEST_CASE("a stop while waiting for a join exits") {
  FakeAgent agent;
  InPlaceWorker worker = agent.Start();
  REQUIRE(worker.Form().goes_on());
  agent.Send("pause 3\nstop\n");
  REQUIRE(PollUntilNotGoingOn(worker).leaves());
  CHECK(worker.AwaitJoin() == Verdict::Exit(kExitCommFailure));
  CHECK(agent.Heard() == "hello 1 in-place\nready 3\n");
}

TEST_CASE("no join within the timeout exits for the restart path") {
  FakeAgent agent;
  InPlaceWorker worker = agent.Start(Context{}, 100ms);
  REQUIRE(worker.Form().goes_on());
  agent.Send("pause 3\n");
  REQUIRE(PollUntilNotGoingOn(worker).leaves());
  const auto started = std::chrono::steady_clock::now();
  CHECK(worker.AwaitJoin() == Verdict::Exit(kExitCommFailure));
  CHECK(std::chrono::steady_clock::now() - started >= 100ms);
  CHECK(agent.Logged("muster did not recover this worker in place in time"));
}

TEST_CASE("an agent gone while the worker waits for a join exits") {
  FakeAgent agent;
  InPlaceWorker worker = agent.Start();
  REQUIRE(worker.Form().goes_on());
  REQUIRE(worker.Leave("the peer hung up").leaves());
  close(agent.from_agent.write_end);
  agent.from_agent.write_end = -1;
  CHECK(worker.AwaitJoin() == Verdict::Exit(kExitCommFailure));
  CHECK(agent.Logged("closed"));
}

TEST_CASE("a second pause during a join leaves that generation unjoined") {
  FakeAgent agent;
  InPlaceWorker worker = agent.Start();
  REQUIRE(worker.Form().goes_on());
  agent.Send(std::string("pause 3\n") + kJoin4);
  REQUIRE(PollUntilNotGoingOn(worker).leaves());
  REQUIRE(worker.AwaitJoin().goes_on());
  REQUIRE(worker.Form().goes_on());
  // Generation 4 ends before this worker answered joined (a node died
  // while the ranks joined): it leaves 4 as it would a running one.
  agent.Send("pause 4\n");
  CHECK(PollUntilNotGoingOn(worker) == Verdict::Leave());
  agent.Send(kJoin5);
  CHECK(worker.AwaitJoin() == Verdict::GoOn());
  CHECK(worker.membership().joining == 5u);
  CHECK(agent.Heard() == "hello 1 in-place\nready 3\nready 4\n");  // never joined 4
}

TEST_CASE("pauses that come while the worker waits for its join are each answered") {
  FakeAgent agent;
  InPlaceWorker worker = agent.Start();
  REQUIRE(worker.Form().goes_on());
  REQUIRE(worker.Leave("the peer hung up").leaves());
  agent.Send(std::string("pause 3\npause 4\n") + kJoin5);
  CHECK(worker.AwaitJoin() == Verdict::GoOn());
  CHECK(worker.membership().joining == 5u);
  CHECK(agent.Heard() == "hello 1 in-place\nready 3\nready 4\n");
}

TEST_CASE("a bad line is logged and ignored, between steps and while waiting") {
  FakeAgent agent;
  InPlaceWorker worker = agent.Start();
  REQUIRE(worker.Form().goes_on());
  agent.Send("resume 3\n");
  CHECK(worker.Poll(5000ms) == Verdict::GoOn());  // returns once the line is read
  CHECK(agent.Logged("resume 3"));

  agent.Send("pause 3\n");
  REQUIRE(PollUntilNotGoingOn(worker).leaves());
  agent.Send(std::string("bogus\n") + kJoin4);
  CHECK(worker.AwaitJoin() == Verdict::GoOn());
  CHECK(agent.Logged("bogus"));
  CHECK(worker.membership().joining == 4u);
}

TEST_CASE("a join while training is logged and ignored") {
  FakeAgent agent;
  InPlaceWorker worker = agent.Start();
  REQUIRE(worker.Form().goes_on());
  agent.Send(kJoin4);
  CHECK(worker.Poll(5000ms) == Verdict::GoOn());  // returns once the line is read
  CHECK(agent.Logged("ignored 'join 4 "));
  CHECK_FALSE(worker.membership().joining);
}

TEST_CASE("a step's wait ends at the agent's pause") {
  FakeAgent agent;
  InPlaceWorker worker = agent.Start();
  REQUIRE(worker.Form().goes_on());
  agent.Send("pause 3\n");
  const auto started = std::chrono::steady_clock::now();
  CHECK(worker.Poll(10'000ms) == Verdict::Leave());
  CHECK(std::chrono::steady_clock::now() - started < 5s);
}

TEST_CASE("not in place, a failed collective exits and a step's wait is a sleep") {
  FakeAgent agent;
  Context ctx;
  ctx.rank0_hosts_store = true;
  InPlaceWorker worker = agent.Start(ctx);
  REQUIRE(worker.Form().goes_on());
  agent.Send("pause 3\n");  // not for a worker that did not say hello
  const auto started = std::chrono::steady_clock::now();
  CHECK(worker.Poll(50ms) == Verdict::GoOn());
  CHECK(std::chrono::steady_clock::now() - started >= 50ms);
  CHECK(worker.LeaveAfter(CommError(CommError::Kind::kTimeout, "allreduce timed out")) ==
        Verdict::Exit(kExitCommFailure));
  CHECK(
      agent.Logged("a collective failed (rank 0): allreduce timed out; exiting for the "
                   "launcher to restart the job"));
}

TEST_CASE("a collective called wrongly exits, in place or not") {
  FakeAgent agent;
  InPlaceWorker worker = agent.Start();
  REQUIRE(worker.Form().goes_on());
  CHECK(worker.LeaveAfter(CommError(CommError::Kind::kInvalidArgument, "root 5 of 1")) ==
        Verdict::Exit(kExitWrongCall));
  CHECK(agent.Logged("a collective was called wrongly (rank 0): root 5 of 1"));
}

TEST_CASE("a generation that cannot be requested exits as bad input") {
  FakeAgent agent;
  InPlaceWorker worker = agent.Start(Context{}, 0ms);  // a timeout the communicator refuses
  CHECK(worker.Form() == Verdict::Exit(kExitBadRequest));
  CHECK_FALSE(agent.log.empty());
}

}  // namespace
}  // namespace muster::runtime
