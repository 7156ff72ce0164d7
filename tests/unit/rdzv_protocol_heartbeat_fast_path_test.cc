#include <catch2/catch.hpp>

#include "rendezvous/protocol/frame_codec.h"
#include "rendezvous/protocol/heartbeat_fast_path.h"
#include "rendezvous/protocol/message_codec.h"

using namespace muster::rdzv;

namespace {
std::string PayloadOf(const Message& m) { return Encode(m).substr(kFrameLengthBytes + 1); }
}  // namespace

TEST_CASE("the heartbeat fast path reads exactly what Encode writes", "[protocol][fast]") {
  for (uint64_t generation : {uint64_t{0}, uint64_t{7}, UINT64_MAX}) {
    const Heartbeat sent{"run-1", "host:12:345", generation};
    auto fast = DecodePlainHeartbeat(PayloadOf(sent));
    REQUIRE(fast.has_value());
    CHECK(fast->run_id == sent.run_id);
    CHECK(fast->node_id == sent.node_id);
    CHECK(fast->generation == generation);
  }
}

TEST_CASE("anything unusual leaves the heartbeat to the general decoder", "[protocol][fast]") {
  for (const char* payload : {
           R"({"generation":1,"node_id":"n","run_id":"r","extra":1})",           // extra field
           R"({"node_id":"n","generation":1,"run_id":"r"})",                     // other order
           R"({"generation":01,"node_id":"n","run_id":"r"})",                    // leading zero
           R"({"generation":-1,"node_id":"n","run_id":"r"})",                    // sign
           R"({"generation":18446744073709551616,"node_id":"n","run_id":"r"})",  // overflow
           R"({"generation":1,"node_id":"a\"b","run_id":"r"})",                  // escape
           R"({"generation":1,"node_id":"é","run_id":"r"})",                     // non-ASCII
           R"({"generation":1, "node_id":"n","run_id":"r"})",                    // whitespace
           R"({"generation":1,"node_id":"n","run_id":"r"} )",
       }) {
    INFO(payload);
    CHECK_FALSE(DecodePlainHeartbeat(payload).has_value());
  }
}

TEST_CASE("a heartbeat decodes the same through either path", "[protocol][fast]") {
  const Heartbeat sent{"run-1", "host:12:345", 42};
  const std::string plain = PayloadOf(sent);
  // A space after a colon is valid JSON the fast path declines: the general
  // decoder reads it, and both must agree on every field.
  const size_t colon = plain.find(':') + 1;
  const std::string spaced = plain.substr(0, colon) + " " + plain.substr(colon);
  REQUIRE_FALSE(DecodePlainHeartbeat(spaced).has_value());
  auto general = Decode(static_cast<uint8_t>(MessageType::kHeartbeat), spaced);
  auto fast = Decode(static_cast<uint8_t>(MessageType::kHeartbeat), plain);
  REQUIRE(general.ok());
  REQUIRE(fast.ok());
  CHECK(std::get<Heartbeat>(*general) == sent);
  CHECK(std::get<Heartbeat>(*fast) == sent);
  // The general path still refuses what the fast path passes on.
  auto refused = Decode(static_cast<uint8_t>(MessageType::kHeartbeat),
                        R"({"generation":-1,"node_id":"n","run_id":"r"})");
  CHECK_FALSE(refused.ok());
}
