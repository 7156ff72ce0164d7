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
    for (uint64_t step : {uint64_t{0}, uint64_t{1}, uint64_t{123456}, UINT64_MAX}) {
      const Heartbeat sent{"run-1", "host:12:345", generation, step, {}};
      const std::string payload = PayloadOf(sent);
      INFO(payload);
      // The step is on the wire exactly when a worker reported one.
      CHECK((payload.find("\"step\"") != std::string::npos) == (step != 0));
      auto fast = DecodePlainHeartbeatView(payload);
      REQUIRE(fast.has_value());
      CHECK(fast->run_id == sent.run_id);
      CHECK(fast->node_id == sent.node_id);
      CHECK(fast->generation == generation);
      CHECK(fast->step == step);
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
      CHECK(fast->step == hb.step);
    }
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
           R"({"generation":1,"node_id":"n","run_id":"r","step":01})",       // leading zero
           R"({"generation":1,"node_id":"n","run_id":"r","step":-1})",       // sign
           R"({"generation":1,"node_id":"n","run_id":"r","step":1.5})",      // not an integer
           R"({"generation":1,"node_id":"n","run_id":"r","step":"1"})",      // a string
           R"({"generation":1,"node_id":"n","run_id":"r","step":})",         // no value
           R"({"generation":1,"node_id":"n","run_id":"r","step":1,"x":2})",  // extra field
           R"({"generation":1,"node_id":"n","run_id":"r","step":1)",         // unclosed
           R"({"generation":1,"node_id":"n","run_id":"r","step":18446744073709551616})",
       }) {
    INFO(payload);
    CHECK_FALSE(DecodePlainHeartbeatView(payload).has_value());
  }
}

TEST_CASE("a heartbeat decodes the same through either path", "[protocol][fast]") {
  const Heartbeat sent{"run-1", "host:12:345", 42, 0, {}};
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

TEST_CASE("a heartbeat with a step decodes the same through either path, refusals included",
          "[protocol][fast]") {
  // "step":0 is never written (Encode leaves 0 out), but both paths read it as 0.
  const std::string zero = R"({"generation":3,"node_id":"n","run_id":"r","step":0})";
  auto fast = DecodePlainHeartbeatView(zero);
  auto general = DecodeHeartbeat(zero);
  REQUIRE(fast.has_value());
  REQUIRE(general.ok());
  CHECK(std::get<Heartbeat>(*general) == Heartbeat{"r", "n", 3, 0, {}});
  CHECK(fast->step == 0);
  // What the fast path passes on for a bad step, the general path refuses.
  for (const char* bad : {R"({"generation":1,"node_id":"n","run_id":"r","step":-1})",
                          R"({"generation":1,"node_id":"n","run_id":"r","step":1.5})",
                          R"({"generation":1,"node_id":"n","run_id":"r","step":"1"})"}) {
    INFO(bad);
    CHECK_FALSE(DecodePlainHeartbeatView(bad).has_value());
    CHECK_FALSE(DecodeHeartbeat(bad).ok());
  }
}

TEST_CASE("a heartbeat with compute times takes the general path, which reads them",
          "[protocol][fast]") {
  const Heartbeat sent{"r", "n", 3, 40, {12'000, 0, 30'000}};
  const std::string payload = PayloadOf(sent);
  CHECK_FALSE(DecodePlainHeartbeatView(payload).has_value());
  auto general = DecodeHeartbeat(payload);
  REQUIRE(general.ok());
  const auto& got = std::get<Heartbeat>(*general);
  CHECK(got == sent);
  const HeartbeatView view(got);
  CHECK(std::vector<uint64_t>(view.compute_us.begin(), view.compute_us.end()) == sent.compute_us);
}
