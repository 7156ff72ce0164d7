// Every rendezvous message survives encode -> frame bytes -> decode, and its
// wire form is the documented one (rendezvous/PROTOCOL.md).
#include <catch2/catch.hpp>

#include <concepts>
#include <set>
#include <string>
#include <vector>

#include "rendezvous/protocol/frame_codec.h"
#include "rendezvous/protocol/message_codec.h"

namespace muster::rdzv {
namespace {

Assignment SampleAssignment() {
  return Assignment{.run_id = "run-7",
                    .generation = 12,
                    .group_rank = 2,
                    .group_world_size = 4,
                    .local_world_size = 8,
                    .global_rank_offset = 16,
                    .world_size = 32,
                    .master_addr = "node0.cluster",
                    .master_port = 29500,
                    .restart_count = 1,
                    .max_restarts = 3};
}

// One message of every kind, every field set to a non-default value (and
// generations beyond 32 bits) so a dropped field shows.
std::vector<Message> SampleMessages() {
  return {
      Hello{.protocol_version = 1, .token = "s3cret", .agent_id = "host-a:4242:9f1c"},
      Join{.run_id = "run-7",
           .node_id = "node-a",
           .host = "host-a",
           .local_world_size = 8,
           .min_nodes = 2,
           .max_nodes = 4,
           .max_restarts = 3,
           .store_addr = "10.0.0.1",
           .store_port = 29400,
           .current = SampleAssignment(),
           .last_generation = 1ull << 40},
      Join{.run_id = "run-7",
           .node_id = "node-b",
           .host = "host-b",
           .local_world_size = 1,
           .min_nodes = 1,
           .max_nodes = 1,
           .max_restarts = 0,
           .store_addr = "",
           .store_port = 0,
           .current = std::nullopt},
      Heartbeat{.run_id = "run-7",
                .node_id = "node-a",
                .generation = 1ull << 40,
                .step = 0,
                .compute_us = {}},
      Heartbeat{
          .run_id = "run-7", .node_id = "node-a", .generation = 2, .step = 90210, .compute_us = {}},
      Heartbeat{.run_id = "run-7",
                .node_id = "node-a",
                .generation = 2,
                .step = 90211,
                .compute_us = {21'500, 0, 43'000}},
      WorkerFailed{.run_id = "run-7",
                   .node_id = "node-a",
                   .generation = 12,
                   .exit_code = -9,
                   .message = "local_rank 3 (pid 1234) killed by SIGKILL"},
      WorkersSucceeded{.run_id = "run-7", .node_id = "node-a", .generation = 12},
      Leave{.run_id = "run-7", .node_id = "node-a"},
      StatusRequest{.run_id = ""},
      Welcome{.protocol_version = 2,
              .daemon_id = "musterd-1700000000-ab12",
              .timing = {.keep_alive_interval_ms = 500,
                         .heartbeat_timeout_ms = 1'250,
                         .fence_timeout_ms = 1'000,
                         .failover_timeout_ms = 3'500}},
      Error{.code = ErrorCode::kStaleGeneration,
            .message = "Heartbeat generation 3 < current 4",
            .fatal = true},
      Waiting{.run_id = "run-7", .reason = "2 of min 4 nodes joined"},
      AssignmentMessage{.assignment = SampleAssignment()},
      HeartbeatAck{.run_id = "run-7", .generation = 12},
      RunEnded{.run_id = "run-7", .succeeded = true, .message = "all workers exited 0"},
      StatusReply{.json = R"({"runs":[{"run_id":"run-7","nodes":["é","\u0000"]}]})"},
      // A replicated rendezvous's epochs and leader.
      Welcome{.protocol_version = 2,
              .daemon_id = "musterd-2",
              .epoch = 1ull << 40,
              .timing = {.keep_alive_interval_ms = 500,
                         .heartbeat_timeout_ms = 1'250,
                         .fence_timeout_ms = 1'000,
                         .failover_timeout_ms = 3'500}},
      Error{.code = ErrorCode::kNotLeader,
            .message = "not the leader: the leader is 10.0.0.2:29400 (epoch 7)",
            .leader = "10.0.0.2:29400",
            .epoch = 7,
            .current = true},
      Error{.code = ErrorCode::kNoLeader, .message = "no leader is elected yet", .current = true},
      AssignmentMessage{.assignment = SampleAssignment(), .epoch = 7},
      // The master's: its store admits the generation's members.
      AssignmentMessage{.assignment = SampleAssignment(),
                        .member_addrs = {"10.0.0.1", "10.0.0.2", "fd00::3"}},
  };
}

// Equal on the wire and by value (every message struct has operator==).
void CheckSame(const Message& expected, const Message& actual) {
  REQUIRE(actual.index() == expected.index());
  CHECK(Encode(actual) == Encode(expected));
  CHECK(actual == expected);
}

TEST_CASE("the samples cover every message kind") {
  std::set<size_t> kinds;
  for (const Message& m : SampleMessages()) kinds.insert(m.index());
  CHECK(kinds.size() == std::variant_size_v<Message>);
}

TEST_CASE("every message round-trips through frame bytes fed one at a time") {
  for (const Message& message : SampleMessages()) {
    CAPTURE(MessageName(message));
    const std::string bytes = Encode(message);
    FrameDecoder decoder;
    for (size_t i = 0; i + 1 < bytes.size(); ++i) {
      decoder.Feed(std::string_view(bytes).substr(i, 1));
      REQUIRE(decoder.Next().state == FrameResult::kNeedMore);
    }
    decoder.Feed(std::string_view(bytes).substr(bytes.size() - 1));
    FrameResult frame = decoder.Next();
    REQUIRE(frame.state == FrameResult::kFrame);
    CHECK(frame.type == static_cast<uint8_t>(TypeOf(message)));
    Result<Message> decoded = Decode(frame.type, frame.payload);
    REQUIRE(decoded.ok());
    CheckSame(message, *decoded);
  }
}

TEST_CASE("all messages sent back to back in one feed decode in order") {
  std::string bytes;
  for (const Message& m : SampleMessages()) bytes += Encode(m);
  FrameDecoder decoder;
  decoder.Feed(bytes);
  for (const Message& expected : SampleMessages()) {
    FrameResult frame = decoder.Next();
    REQUIRE(frame.state == FrameResult::kFrame);
    Result<Message> decoded = Decode(frame.type, frame.payload);
    REQUIRE(decoded.ok());
    CheckSame(expected, *decoded);
  }
  CHECK(decoder.Next().state == FrameResult::kNeedMore);
}

TEST_CASE("type bytes are the documented stable numbers") {
  CHECK(TypeOf(Hello{}) == MessageType::kHello);
  CHECK(static_cast<int>(MessageType::kHello) == 0x01);
  CHECK(static_cast<int>(MessageType::kJoin) == 0x02);
  CHECK(static_cast<int>(MessageType::kHeartbeat) == 0x03);
  CHECK(static_cast<int>(MessageType::kWorkerFailed) == 0x04);
  CHECK(static_cast<int>(MessageType::kWorkersSucceeded) == 0x05);
  CHECK(static_cast<int>(MessageType::kLeave) == 0x06);
  CHECK(static_cast<int>(MessageType::kStatusRequest) == 0x07);
  CHECK(static_cast<int>(MessageType::kWelcome) == 0x81);
  CHECK(static_cast<int>(MessageType::kError) == 0x82);
  CHECK(static_cast<int>(MessageType::kWaiting) == 0x83);
  CHECK(static_cast<int>(MessageType::kAssignment) == 0x84);
  CHECK(static_cast<int>(MessageType::kHeartbeatAck) == 0x85);
  CHECK(static_cast<int>(MessageType::kRunEnded) == 0x86);
  CHECK(static_cast<int>(MessageType::kStatusReply) == 0x87);
  CHECK(TypeOf(AssignmentMessage{}) == MessageType::kAssignment);
  CHECK(TypeOf(StatusReply{}) == MessageType::kStatusReply);
}

TEST_CASE("message names are the struct names, Assignment for AssignmentMessage") {
  CHECK(MessageName(Hello{}) == "Hello");
  CHECK(MessageName(WorkersSucceeded{}) == "WorkersSucceeded");
  CHECK(MessageName(AssignmentMessage{}) == "Assignment");
  CHECK(MessageName(StatusReply{}) == "StatusReply");
}

TEST_CASE("a heartbeat is the documented bytes") {
  CHECK(Encode(Heartbeat{
            .run_id = "r", .node_id = "n", .generation = 3, .step = 0, .compute_us = {}}) ==
        EncodeFrame(0x03, R"({"generation":3,"node_id":"n","run_id":"r"})"));
  // A node's progress, once its workers report steps: a few bytes more.
  CHECK(Encode(Heartbeat{
            .run_id = "r", .node_id = "n", .generation = 3, .step = 1200, .compute_us = {}}) ==
        EncodeFrame(0x03, R"({"generation":3,"node_id":"n","run_id":"r","step":1200})"));
}

TEST_CASE("compute times are a list of unsigned integers, bounded, naming the field") {
  CHECK(Encode(Heartbeat{
            .run_id = "r", .node_id = "n", .generation = 3, .step = 9, .compute_us = {1500, 0}}) ==
        EncodeFrame(
            0x03, R"({"compute_us":[1500,0],"generation":3,"node_id":"n","run_id":"r","step":9})"));
  const std::string head = R"({"generation":3,"node_id":"n","run_id":"r","compute_us":)";
  for (const std::string bad : {"[-1]", "[1.5]", "[\"1\"]", "7", "[[1]]"}) {
    INFO(bad);
    Result<Message> refused = Decode(0x03, head + bad + "}");
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message().find("Heartbeat.compute_us: expected") != std::string::npos);
  }
  std::string many = "[";
  for (size_t i = 0; i <= kMaxComputeRanks; ++i) many += (i ? ",1" : "1");
  Result<Message> too_many = Decode(0x03, head + many + "]}");
  REQUIRE_FALSE(too_many.ok());
  CHECK(too_many.status().message().find("at most 1024") != std::string::npos);
  Result<Message> null = Decode(0x03, head + "null}");
  REQUIRE(null.ok());
  CHECK(std::get<Heartbeat>(*null).compute_us.empty());
}

TEST_CASE("an assignment is a nested object and an empty optional is left out") {
  Join join = std::get<Join>(SampleMessages()[2]);
  REQUIRE_FALSE(join.current.has_value());
  CHECK(Encode(join).find("current") == std::string::npos);
  join.current = SampleAssignment();
  CHECK(Encode(join).find(R"("current":{"generation":12,"global_rank_offset":16,)") !=
        std::string::npos);
}

TEST_CASE("epochs and the leader are left out when unset and read as unset when missing") {
  // What an unreplicated daemon sends.
  const std::string timing =
      R"("failover_timeout_ms":3,"fence_timeout_ms":1,"heartbeat_timeout_ms":2,)"
      R"("keep_alive_interval_ms":1)";
  CHECK(Encode(Welcome{.protocol_version = 2,
                       .daemon_id = "d",
                       .timing = {.keep_alive_interval_ms = 1,
                                  .heartbeat_timeout_ms = 2,
                                  .fence_timeout_ms = 1,
                                  .failover_timeout_ms = 3}}) ==
        EncodeFrame(0x81, R"({"daemon_id":"d",)" + timing + R"(,"protocol_version":2})"));
  Result<Message> welcome =
      Decode(0x81, R"({"daemon_id":"d",)" + timing + R"(,"protocol_version":2})");
  REQUIRE(welcome.ok());
  CHECK(std::get<Welcome>(*welcome).epoch == 0);
  Result<Message> error = Decode(0x82, R"({"code":"no_leader","message":"m","fatal":false,
                                           "leader":null})");
  REQUIRE(error.ok());
  CHECK(std::get<Error>(*error).leader.empty());
  CHECK(std::get<Error>(*error).epoch == 0);
  CHECK_FALSE(std::get<Error>(*error).current);  // a standby that cannot say is not current
  CHECK(Encode(Error{.code = ErrorCode::kNoLeader, .message = "m"}).find("current") ==
        std::string::npos);
  CHECK(Encode(AssignmentMessage{.assignment = SampleAssignment()}).find("epoch") ==
        std::string::npos);
  CHECK(Encode(AssignmentMessage{.assignment = SampleAssignment()}).find("member_addrs") ==
        std::string::npos);
}

TEST_CASE("member addresses must be a list of short strings, naming the field") {
  const std::string assignment = R"("assignment":{"run_id":"r","generation":1,"group_rank":0,
    "group_world_size":1,"local_world_size":1,"global_rank_offset":0,"world_size":1,
    "master_addr":"a","master_port":1,"restart_count":0,"max_restarts":0})";
  Result<Message> not_list = Decode(0x84, "{" + assignment + R"(,"member_addrs":"10.0.0.1"})");
  REQUIRE_FALSE(not_list.ok());
  CHECK(not_list.status().message().find("Assignment.member_addrs: expected an array") !=
        std::string::npos);
  Result<Message> not_string = Decode(0x84, "{" + assignment + R"(,"member_addrs":[1]})");
  REQUIRE_FALSE(not_string.ok());
  CHECK(not_string.status().message().find("Assignment.member_addrs: expected strings") !=
        std::string::npos);
  Result<Message> missing = Decode(0x84, "{" + assignment + "}");
  REQUIRE(missing.ok());
  CHECK(std::get<AssignmentMessage>(*missing).member_addrs.empty());
}

TEST_CASE("a Welcome without the daemon's timing (a version 1 daemon's) is refused, naming it") {
  Result<Message> old = Decode(0x81, R"({"daemon_id":"d","protocol_version":1})");
  REQUIRE_FALSE(old.ok());
  CHECK(old.status().message() == "Welcome.keep_alive_interval_ms: missing");
  Result<Message> negative = Decode(0x81, R"({"daemon_id":"d","protocol_version":2,
    "keep_alive_interval_ms":500,"heartbeat_timeout_ms":-1,"fence_timeout_ms":1,
    "failover_timeout_ms":3})");
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.status().message().find("Welcome.heartbeat_timeout_ms: expected an integer") !=
        std::string::npos);
}

TEST_CASE("a bad epoch or leader is refused, naming the field") {
  Result<Message> negative = Decode(0x81, R"({"daemon_id":"d","protocol_version":1,"epoch":-3})");
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.status().message().find("Welcome.epoch") != std::string::npos);
  Result<Message> leader = Decode(0x82, R"({"code":"not_leader","message":"m","fatal":false,
                                            "leader":7})");
  REQUIRE_FALSE(leader.ok());
  CHECK(leader.status().message().find("Error.leader: expected a string") != std::string::npos);
  Result<Message> current = Decode(0x82, R"({"code":"no_leader","message":"m","fatal":false,
                                             "current":1})");
  REQUIRE_FALSE(current.ok());
  CHECK(current.status().message().find("Error.current: expected true or false") !=
        std::string::npos);
}

TEST_CASE("a hand-written join from another language decodes, extra fields ignored") {
  Result<Message> decoded = Decode(0x02, R"({
      "run_id": "r", "node_id": "n", "host": "h", "local_world_size": 2,
      "min_nodes": 1, "max_nodes": 3, "max_restarts": 0,
      "store_addr": "10.1.1.1", "store_port": 0, "current": null,
      "added_in_protocol_2": {"nested": [1, 2, {"x": true}]}})");
  REQUIRE(decoded.ok());
  const Join& join = std::get<Join>(*decoded);
  CHECK(join.node_id == "n");
  CHECK(join.max_nodes == 3);
  CHECK(join.store_addr == "10.1.1.1");
  CHECK_FALSE(join.current.has_value());
}

TEST_CASE("strings that are not UTF-8 are sent with U+FFFD instead of failing") {
  const std::string bytes = Encode(Error{.code = ErrorCode::kBadFrame, .message = "got \xff here"});
  FrameDecoder decoder;
  decoder.Feed(bytes);
  FrameResult frame = decoder.Next();
  REQUIRE(frame.state == FrameResult::kFrame);
  Result<Message> decoded = Decode(frame.type, frame.payload);
  REQUIRE(decoded.ok());
  CHECK(std::get<Error>(*decoded).message == "got \xef\xbf\xbd here");
}

}  // namespace
}  // namespace muster::rdzv
