// ControlChannel: the worker's end of the control channel over real pipes
// (a fake environment names them): lines out, messages in, in pieces or
// many at once, bounded waits, and no channel without both pipes.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "tests/unit/launcher_test_support.h"
#include "tests/unit/runtime_pipe_test_support.h"
#include "worker_runtime/control/control_channel.h"

namespace muster::runtime {
namespace {

using muster::testing::EnvOf;
using muster::testing::Pipe;
using namespace std::chrono_literals;

// The agent's side: it writes `from_agent`, reads `to_agent`.
struct Wired {
  Pipe from_agent;
  Pipe to_agent;
  ControlChannel channel =
      ControlChannel::FromEnv(EnvOf({{"MUSTER_CONTROL_FD", std::to_string(from_agent.read_end)},
                                     {"MUSTER_PROGRESS_FD", std::to_string(to_agent.write_end)}}));
};

TEST_CASE("a worker's messages are lines on the progress pipe") {
  Wired w;
  REQUIRE(w.channel.enabled());
  REQUIRE(w.channel.Say(control::Hello{1, {"in-place"}}).ok());
  REQUIRE(w.channel.Say(control::Ready{3}).ok());
  CHECK(w.to_agent.Drain() == "hello 1 in-place\nready 3\n");
}

TEST_CASE("the agent's messages arrive whole, however the bytes are cut") {
  Wired w;
  std::optional<control::AgentMessage> message;
  REQUIRE(w.channel.Receive(0ms, message).ok());
  CHECK_FALSE(message);  // nothing yet: no wait

  w.from_agent.Write("pau");
  REQUIRE(w.channel.Receive(0ms, message).ok());
  CHECK_FALSE(message);
  w.from_agent.Write("se 7\nstop\n");
  REQUIRE(w.channel.Receive(0ms, message).ok());
  REQUIRE(message);
  CHECK(*message == control::AgentMessage{control::Pause{7}});
  REQUIRE(w.channel.Receive(0ms, message).ok());  // the second line was read already
  REQUIRE(message);
  CHECK(*message == control::AgentMessage{control::Stop{}});
}

TEST_CASE("a wait for the agent is bounded") {
  Wired w;
  std::optional<control::AgentMessage> message;
  const auto started = std::chrono::steady_clock::now();
  REQUIRE(w.channel.Receive(50ms, message).ok());
  CHECK_FALSE(message);
  CHECK(std::chrono::steady_clock::now() - started >= 50ms);
}

TEST_CASE("a bad line is an error naming it, and the channel goes on") {
  Wired w;
  w.from_agent.Write("resume 3\npause 4\n");
  std::optional<control::AgentMessage> message;
  const Status bad = w.channel.Receive(0ms, message);
  CHECK(bad.IsInvalidArgument());
  CHECK_THAT(bad.message(), Catch::Contains("resume 3"));
  REQUIRE(w.channel.Receive(0ms, message).ok());
  REQUIRE(message);
  CHECK(*message == control::AgentMessage{control::Pause{4}});
}

TEST_CASE("an agent that closed its end is an I/O error") {
  Wired w;
  close(w.from_agent.write_end);
  w.from_agent.write_end = -1;
  std::optional<control::AgentMessage> message;
  const Status gone = w.channel.Receive(1000ms, message);
  CHECK(gone.code() == Status::Code::kIoError);
  CHECK_THAT(gone.message(), Catch::Contains("closed"));
}

TEST_CASE("without both pipes there is no channel") {
  Pipe p;
  const auto fd = std::to_string(p.read_end);
  CHECK_FALSE(ControlChannel::FromEnv(EnvOf({})).enabled());
  CHECK_FALSE(ControlChannel::FromEnv(EnvOf({{"MUSTER_CONTROL_FD", fd}})).enabled());
  CHECK_FALSE(ControlChannel::FromEnv(EnvOf({{"MUSTER_PROGRESS_FD", fd}})).enabled());
  CHECK_FALSE(
      ControlChannel::FromEnv(EnvOf({{"MUSTER_CONTROL_FD", "x"}, {"MUSTER_PROGRESS_FD", fd}}))
          .enabled());
  // A descriptor that is not a pipe (stdin may be anything; /dev/null is not one).
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  CHECK_FALSE(ControlChannel::FromEnv(EnvOf({{"MUSTER_CONTROL_FD", std::to_string(null_fd)},
                                             {"MUSTER_PROGRESS_FD", fd}}))
                  .enabled());
  close(null_fd);
  ControlChannel none;
  std::optional<control::AgentMessage> message;
  CHECK_FALSE(none.Say(control::Ready{1}).ok());
  CHECK_FALSE(none.Receive(0ms, message).ok());
}

}  // namespace
}  // namespace muster::runtime
