#include <catch2/catch.hpp>

#include "rendezvous/protocol/frame_codec.h"
#include "rendezvous/protocol/heartbeat_fast_path.h"
#include "rendezvous/protocol/message_codec.h"

using namespace muster::rdzv;

namespace {
std::string PayloadOf(const Message& m) { return Encode(m).substr(kFrameLengthBytes + 1); }

muster::Result<Message> DecodeHeartbeat(std::string_view payload) {
  return Decode(static_cast<uint8_t>(MessageType::kHeartbeat), payload);
}
}  // namespace

TEST_CASE("the heartbeat fast path reads exactly what Encode writes, as Decode does",
          "[protocol][fast]") {
  for (uint64_t generation : {uint64_t{0}, uint64_t{7}, UINT64_MAX}) {
    const Heartbeat sent{"run-1", "host:12:345", generation};
    const std::string payload = PayloadOf(sent);
    auto fast = DecodePlainHeartbeatView(payload);
    REQUIRE(fast.has_value());
    CHECK(fast->run_id == sent.run_id);
    CHECK(fast->node_id == sent.node_id);
    CHECK(fast->generation == generation);
    // The views point into the payload: nothing was copied.
    CHECK(fast->run_id.data() >= payload.data());
    CHECK(fast->run_id.data() < payload.data() + payload.size());

    auto general = DecodeHeartbeat(payload);
    REQUIRE(general.ok());
    const Heartbeat& hb = std::get<Heartbeat>(*general);
    CHECK(hb == sent);
    CHECK(fast->run_id == hb.run_id);
    CHECK(fast->node_id == hb.node_id);
    CHECK(fast->generation == hb.generation);
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
    CHECK_FALSE(DecodePlainHeartbeatView(payload).has_value());
  }
}

TEST_CASE("a heartbeat decodes the same through either path", "[protocol][fast]") {
  const Heartbeat sent{"run-1", "host:12:345", 42};
  const std::string plain = PayloadOf(sent);
  // A space after a colon is valid JSON the fast path declines: the general
  // decoder reads it, and both must agree on every field.
  const size_t colon = plain.find(':') + 1;
  const std::string spaced = plain.substr(0, colon) + " " + plain.substr(colon);
  REQUIRE_FALSE(DecodePlainHeartbeatView(spaced).has_value());
  auto general = DecodeHeartbeat(spaced);
  auto fast = DecodePlainHeartbeatView(plain);
  REQUIRE(general.ok());
  REQUIRE(fast.has_value());
  CHECK(std::get<Heartbeat>(*general) == sent);
  CHECK(fast->run_id == sent.run_id);
  CHECK(fast->node_id == sent.node_id);
  CHECK(fast->generation == sent.generation);
  // The general path still refuses what the fast path passes on.
  auto refused = DecodeHeartbeat(R"({"generation":-1,"node_id":"n","run_id":"r"})");
  CHECK_FALSE(refused.ok());
}
