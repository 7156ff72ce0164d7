// Strict decoding: every malformed payload is refused with a message that
// names the field and quotes the bad value; nothing throws.
#include <catch2/catch.hpp>

#include <string>

#include "rendezvous/protocol/message_codec.h"

namespace muster::rdzv {
namespace {

constexpr uint8_t kHeartbeat = static_cast<uint8_t>(MessageType::kHeartbeat);
constexpr uint8_t kJoin = static_cast<uint8_t>(MessageType::kJoin);

// The refusal message, or "accepted" when the payload decodes.
std::string Refusal(uint8_t type, const std::string& payload) {
  Result<Message> r = Decode(type, payload);
  if (r.ok()) return "accepted";
  CHECK(r.status().IsInvalidArgument());
  return r.status().message();
}

// A heartbeat payload with `field_json` spliced in after run_id and node_id
// (a later duplicate key wins, so it can override generation too).
std::string HeartbeatWith(const std::string& field_json) {
  return R"({"run_id":"r","node_id":"n","generation":1,)" + field_json + "}";
}

std::string JoinWith(const std::string& field_json) {
  return R"({"run_id":"r","node_id":"n","host":"h","local_world_size":1,"min_nodes":1,)"
         R"("max_nodes":1,"max_restarts":0,"store_addr":"a","store_port":1,)" +
         field_json + "}";
}

std::string AssignmentWith(const std::string& field_json) {
  return R"({"run_id":"r","generation":1,"group_rank":0,"group_world_size":1,)"
         R"("local_world_size":1,"global_rank_offset":0,"world_size":1,"master_addr":"m",)"
         R"("master_port":1,"restart_count":0,"max_restarts":0,)" +
         field_json + "}";
}

TEST_CASE("an unknown type byte is refused, quoting it in hex") {
  CHECK(Refusal(0x00, "{}") == "unknown message type byte 0x00");
  CHECK(Refusal(0x08, "{}") == "unknown message type byte 0x08");
  CHECK(Refusal(0x80, "{}") == "unknown message type byte 0x80");
  CHECK(Refusal(0xff, "{}") == "unknown message type byte 0xff");
}

TEST_CASE("a payload that is not JSON is refused, quoting its bytes") {
  CHECK(Refusal(kHeartbeat, "{not json") == "Heartbeat: payload is not valid JSON: '{not json'");
  CHECK(Refusal(kHeartbeat, "") == "Heartbeat: payload is not valid JSON: ''");
  CHECK(Refusal(kHeartbeat, std::string("\x00\x01\xfe", 3)) ==
        "Heartbeat: payload is not valid JSON: '\\x00\\x01\\xfe'");
  CHECK(Refusal(kHeartbeat, HeartbeatWith(R"("x":1)") + " trailing") ==
        "Heartbeat: payload is not valid JSON: "
        "'{\"run_id\":\"r\",\"node_id\":\"n\",\"generation\":1,\"x\":1} trailing'");
}

TEST_CASE("a long garbage payload is quoted truncated") {
  const std::string message = Refusal(kHeartbeat, std::string(100000, '#'));
  CHECK(message == "Heartbeat: payload is not valid JSON: '" + std::string(64, '#') + "'...");
}

TEST_CASE("a string with invalid UTF-8 is refused") {
  CHECK(Refusal(kHeartbeat, "{\"run_id\":\"\xc3\x28\"}")
            .starts_with("Heartbeat: payload is not valid JSON: "));
}

TEST_CASE("a payload that is JSON but not an object is refused") {
  CHECK(Refusal(kHeartbeat, "[1,2]") == "Heartbeat: payload is not a JSON object: [1,2]");
  CHECK(Refusal(kHeartbeat, R"("hello")") == R"(Heartbeat: payload is not a JSON object: "hello")");
  CHECK(Refusal(kHeartbeat, "null") == "Heartbeat: payload is not a JSON object: null");
}

TEST_CASE("a missing required field is named") {
  CHECK(Refusal(kHeartbeat, R"({"run_id":"r","generation":1})") == "Heartbeat.node_id: missing");
  CHECK(Refusal(static_cast<uint8_t>(MessageType::kAssignment), "{}") ==
        "Assignment.assignment: missing");
}

TEST_CASE("a missing field inside a nested assignment is named by its path") {
  CHECK(Refusal(kJoin, JoinWith(R"("current":{"run_id":"r"})")) ==
        "Join.current.generation: missing");
}

TEST_CASE("a string field holding another type is refused, quoting the value") {
  CHECK(Refusal(kHeartbeat, HeartbeatWith(R"("run_id":42)")) ==
        "Heartbeat.run_id: expected a string, got 42");
  CHECK(Refusal(kHeartbeat, HeartbeatWith(R"("node_id":null)")) ==
        "Heartbeat.node_id: expected a string, got null");
}

TEST_CASE("an integer field holding a string, float or boolean is refused") {
  const std::string range = "expected an integer in [0, 18446744073709551615]";
  CHECK(Refusal(kHeartbeat, HeartbeatWith(R"("generation":"7")")) ==
        "Heartbeat.generation: " + range + R"(, got "7")");
  CHECK(Refusal(kHeartbeat, HeartbeatWith(R"("generation":1.5)")) ==
        "Heartbeat.generation: " + range + ", got 1.5");
  CHECK(Refusal(kHeartbeat, HeartbeatWith(R"("generation":true)")) ==
        "Heartbeat.generation: " + range + ", got true");
  CHECK(Refusal(kHeartbeat, HeartbeatWith(R"("generation":1e30)")) ==
        "Heartbeat.generation: " + range + ", got 1e+30");
}

TEST_CASE("a negative count, rank or generation is refused") {
  CHECK(Refusal(kHeartbeat, HeartbeatWith(R"("generation":-1)")) ==
        "Heartbeat.generation: expected an integer in [0, 18446744073709551615], got -1");
  CHECK(Refusal(kJoin, JoinWith(R"("local_world_size":-3)")) ==
        "Join.local_world_size: expected an integer in [0, 2147483647], got -3");
  CHECK(Refusal(kJoin, JoinWith(R"("max_restarts":-1)")) ==
        "Join.max_restarts: expected an integer in [0, 2147483647], got -1");
  CHECK(Refusal(kJoin, JoinWith(R"("current":)" + AssignmentWith(R"("group_rank":-2)"))) ==
        "Join.current.group_rank: expected an integer in [0, 2147483647], got -2");
}

TEST_CASE("an integer beyond its C++ type is refused") {
  CHECK(Refusal(kJoin, JoinWith(R"("min_nodes":2147483648)")) ==
        "Join.min_nodes: expected an integer in [0, 2147483647], got 2147483648");
  CHECK(Refusal(static_cast<uint8_t>(MessageType::kHello),
                R"({"protocol_version":4294967296,"token":"","agent_id":"a"})") ==
        "Hello.protocol_version: expected an integer in [0, 4294967295], got 4294967296");
}

TEST_CASE("a port outside 0..65535 is refused") {
  CHECK(Refusal(kJoin, JoinWith(R"("store_port":65536)")) ==
        "Join.store_port: expected an integer in [0, 65535], got 65536");
  CHECK(Refusal(kJoin, JoinWith(R"("store_port":65535)")) == "accepted");
}

TEST_CASE("an exit code may be negative") {
  CHECK(Refusal(static_cast<uint8_t>(MessageType::kWorkerFailed),
                R"({"run_id":"r","node_id":"n","generation":1,"exit_code":-9,"message":""})") ==
        "accepted");
}

TEST_CASE("a boolean field holding a number is refused") {
  CHECK(Refusal(static_cast<uint8_t>(MessageType::kError),
                R"({"code":"c","message":"m","fatal":1})") ==
        "Error.fatal: expected true or false, got 1");
}

TEST_CASE("a nested assignment that is not an object is refused") {
  CHECK(Refusal(kJoin, JoinWith(R"("current":5)")) == "Join.current: expected an object, got 5");
  CHECK(Refusal(kJoin, JoinWith(R"("current":null)")) == "accepted");
}

TEST_CASE("an id, host or token over 4 KiB is refused, quoted truncated") {
  const std::string big(5000, 'a');
  CHECK(Refusal(static_cast<uint8_t>(MessageType::kHello),
                R"({"protocol_version":1,"agent_id":"a","token":")" + big + R"("})") ==
        "Hello.token: expected a string of at most 4096 bytes, got 5000 bytes \"" +
            std::string(63, 'a') + "...");
  CHECK(Refusal(kHeartbeat, HeartbeatWith(R"("node_id":")" + big + R"(")"))
            .starts_with("Heartbeat.node_id: expected a string of at most 4096 bytes"));
  CHECK(Refusal(kJoin, JoinWith(R"("host":")" + big + R"(")"))
            .starts_with("Join.host: expected a string of at most 4096 bytes"));
  CHECK(Refusal(static_cast<uint8_t>(MessageType::kWorkerFailed),
                R"({"run_id":"r","node_id":"n","generation":1,"exit_code":1,"message":")" + big +
                    R"("})")
            .starts_with("WorkerFailed.message: expected a string of at most 4096 bytes"));
}

TEST_CASE("a string of exactly 4 KiB is accepted") {
  CHECK(Refusal(kHeartbeat, HeartbeatWith(R"("node_id":")" + std::string(4096, 'n') + R"(")")) ==
        "accepted");
}

TEST_CASE("an error message and a status document may be longer than 4 KiB") {
  const std::string big(200000, 'x');
  CHECK(Refusal(static_cast<uint8_t>(MessageType::kError),
                R"({"code":"c","fatal":false,"message":")" + big + R"("})") == "accepted");
  CHECK(Refusal(static_cast<uint8_t>(MessageType::kStatusReply), R"({"json":")" + big + R"("})") ==
        "accepted");
}

TEST_CASE("unknown extra fields are ignored") {
  CHECK(Refusal(kHeartbeat, HeartbeatWith(R"("future":{"a":[1,{"b":null}]})")) == "accepted");
}

TEST_CASE("nesting deeper than the limit is refused without building it") {
  std::string nested = "1";
  for (int i = 0; i < 15; ++i) nested = "[" + nested + "]";
  CHECK(Refusal(kHeartbeat, HeartbeatWith(R"("x":)" + nested)) == "accepted");  // depth 16
  nested = "[" + nested + "]";
  CHECK(Refusal(kHeartbeat, HeartbeatWith(R"("x":)" + nested)) ==
        "Heartbeat: payload nests deeper than 16 levels");
  const std::string bomb =
      HeartbeatWith(R"("x":)" + std::string(1000000, '[') + std::string(1000000, ']'));
  CHECK(Refusal(kHeartbeat, bomb) == "Heartbeat: payload nests deeper than 16 levels");
}

TEST_CASE("the first bad field in declaration order is the one reported") {
  CHECK(Refusal(kHeartbeat, R"({"run_id":1,"node_id":2})") ==
        "Heartbeat.run_id: expected a string, got 1");
}

}  // namespace
}  // namespace muster::rdzv
