// The control channel's lines (control/PROTOCOL.md): every message round
// trips through its text, and each malformed line is refused with an error
// that names it. The lines and their meanings that both codecs share are in
// control/test_vectors.txt (control_vectors_test.cc); here: the words of the
// errors, and what a line cannot show.
#include "control/control_message.h"

#include <catch2/catch.hpp>
#include <string>

namespace muster::control {
namespace {

Join SomeJoin() {
  return Join{.generation = 7,
              .rank = 5,
              .world_size = 8,
              .group_rank = 2,
              .local_rank = 1,
              .master_addr = "10.0.0.3",
              .master_port = 29500,
              .store_prefix = "/muster/gen7/"};
}

std::string WorkerError(std::string_view line) {
  WorkerMessage message;
  const Status status = ParseWorkerMessage(line, message);
  REQUIRE_FALSE(status.ok());
  return status.message();
}

std::string AgentError(std::string_view line) {
  AgentMessage message;
  const Status status = ParseAgentMessage(line, message);
  REQUIRE_FALSE(status.ok());
  return status.message();
}

TEST_CASE("every worker message round trips through its line") {
  const WorkerMessage messages[] = {
      Hello{1, {"in-place"}},
      Hello{3, {}},
      Hello{1, {"in-place", "x-later"}},
      Ready{0},
      Joined{18446744073709551615ull},
      Failed{4, "NCCL abort timed out after 2 s"},
      Failed{4, ""},
  };
  for (const WorkerMessage& message : messages) {
    const std::string line = FormatWorkerMessage(message);
    INFO(line);
    WorkerMessage parsed;
    REQUIRE(ParseWorkerMessage(line, parsed).ok());
    CHECK(parsed == message);
  }
}

TEST_CASE("every agent message round trips through its line") {
  const AgentMessage messages[] = {Pause{3}, SomeJoin(), Stop{}};
  for (const AgentMessage& message : messages) {
    const std::string line = FormatAgentMessage(message);
    INFO(line);
    AgentMessage parsed;
    REQUIRE(ParseAgentMessage(line, parsed).ok());
    CHECK(parsed == message);
  }
}

TEST_CASE("a worker can recover in place only when its hello names the capability") {
  CHECK(CanRecoverInPlace(Hello{1, {"in-place"}}));
  CHECK(CanRecoverInPlace(Hello{2, {"x-later", "in-place"}}));
  CHECK_FALSE(CanRecoverInPlace(Hello{1, {}}));
  CHECK_FALSE(CanRecoverInPlace(Hello{1, {"in-placeX"}}));
}

TEST_CASE("progress and fault reports are not control messages") {
  CHECK_THAT(WorkerError("42"), Catch::Contains("not a worker message"));
  CHECK_THAT(WorkerError("inject 3"), Catch::Contains("not a worker message"));
}

TEST_CASE("malformed worker lines are refused with the line named") {
  CHECK_THAT(WorkerError("hello"), Catch::Contains("needs a version"));
  CHECK_THAT(WorkerError("hello 0 in-place"), Catch::Contains("version '0'"));
  CHECK_THAT(WorkerError("hello 01"), Catch::Contains("version '01'"));
  CHECK_THAT(WorkerError("hello -1"), Catch::Contains("version '-1'"));
  CHECK_THAT(WorkerError("hello 1  in-place"), Catch::Contains("empty field"));
  CHECK_THAT(WorkerError("ready"), Catch::Contains("takes 1 field(s), not 0"));
  CHECK_THAT(WorkerError("ready 3 4"), Catch::Contains("takes 1 field(s), not 2"));
  CHECK_THAT(WorkerError("ready x"), Catch::Contains("generation 'x'"));
  CHECK_THAT(WorkerError("joined 18446744073709551616"), Catch::Contains("generation"));
  CHECK_THAT(WorkerError("ready 3 "), Catch::Contains("takes 1 field(s)"));
  CHECK_THAT(WorkerError("failed 3"), Catch::Contains("takes 2 field(s), not 1"));
  CHECK_THAT(WorkerError("failed 3 bad\tbyte"), Catch::Contains("outside 0x20-0x7e"));
  CHECK_THAT(WorkerError("Ready 3"), Catch::Contains("control line 'Ready 3'"));
  CHECK_THAT(WorkerError(""), Catch::Contains("not a worker message"));
}

TEST_CASE("malformed agent lines are refused with the line named") {
  const std::string good =
      "join 7 RANK=5 WORLD_SIZE=8 GROUP_RANK=2 LOCAL_RANK=1 MASTER_ADDR=10.0.0.3 "
      "MASTER_PORT=29500 STORE_PREFIX=/p/";
  AgentMessage parsed;
  REQUIRE(ParseAgentMessage(good, parsed).ok());
  CHECK_THAT(AgentError("pause"), Catch::Contains("takes 1 field(s)"));
  CHECK_THAT(AgentError("stop now"), Catch::Contains("takes 0 field(s), not 1"));
  CHECK_THAT(AgentError("join"), Catch::Contains("needs a generation"));
  CHECK_THAT(AgentError("join 7 RANK=5"), Catch::Contains("WORLD_SIZE is missing"));
  CHECK_THAT(AgentError(good + " RANK=5"), Catch::Contains("'RANK' is given twice"));
  CHECK_THAT(AgentError(good + " NODE=3"), Catch::Contains("'NODE' is not one of version 1's"));
  CHECK_THAT(AgentError(good + " RANK"), Catch::Contains("'RANK' is not NAME=VALUE"));
  CHECK_THAT(AgentError(good + " =3"), Catch::Contains("is not NAME=VALUE"));
  CHECK_THAT(AgentError("join 7 RANK=8 WORLD_SIZE=8 GROUP_RANK=2 LOCAL_RANK=1 MASTER_ADDR=a "
                        "MASTER_PORT=1 STORE_PREFIX=/p/"),
             Catch::Contains("must be below WORLD_SIZE"));
  CHECK_THAT(AgentError("join 7 RANK=0 WORLD_SIZE=0 GROUP_RANK=0 LOCAL_RANK=0 MASTER_ADDR=a "
                        "MASTER_PORT=1 STORE_PREFIX=/p/"),
             Catch::Contains("WORLD_SIZE='0' is not a number from 1"));
  CHECK_THAT(AgentError("join 7 RANK=0 WORLD_SIZE=1 GROUP_RANK=0 LOCAL_RANK=0 MASTER_ADDR=a "
                        "MASTER_PORT=65536 STORE_PREFIX=/p/"),
             Catch::Contains("MASTER_PORT='65536' is not a number from 1 to 65535"));
  CHECK_THAT(AgentError("resume 3"), Catch::Contains("not an agent message"));
}

TEST_CASE("a line over the limit is refused, and an error stays one line") {
  const std::string long_reason(kMaxLineBytes, 'x');
  CHECK_THAT(WorkerError("failed 3 " + long_reason), Catch::Contains("longer than 4096 bytes"));
  CHECK_THAT(AgentError("join 3 " + long_reason), Catch::Contains("longer than 4096 bytes"));
  const std::string error = WorkerError(std::string("ready 3\n4", 9));
  CHECK(error.find('\n') == std::string::npos);
  CHECK_THAT(error, Catch::Contains("\\n"));
}

}  // namespace
}  // namespace muster::control
