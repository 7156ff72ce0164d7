// The status document a StatusRequest gets: its content, and the bound on its
// frame (the one frame allowed over 1 MiB, up to kMaxStatusReplyFrameBytes).
#include <catch2/catch.hpp>

#include "tests/unit/rdzv_state_test_support.h"

using namespace muster::rdzv;
using namespace muster::rdzv::testing;

namespace {

// The connection a status client asks on: it joins no run.
constexpr ConnId kStatusConn = 1;

Actions AskStatus(RendezvousCore& core, const std::string& run_id) {
  return core.Handle(MessageEvent{kStatusConn, StatusRequest{run_id}}, Time{});
}

// Joins `n` nodes with the longest ids the protocol allows, into a run that
// waits for more (MIN above n), so every node shows in its status.
void JoinLongNodes(RendezvousCore& core, int n) {
  for (int i = 0; i < n; ++i) {
    Join j;
    j.run_id = "big";
    j.node_id = std::to_string(i) + std::string(kMaxShortStringBytes - 8, 'n');
    j.host = std::string(kMaxShortStringBytes, 'h');
    j.min_nodes = n + 1;
    j.max_nodes = n + 1;
    j.store_addr = "10.0";
    core.Handle(MessageEvent{static_cast<ConnId>(100 + i), j}, Time{});
  }
}

}  // namespace

TEST_CASE("a status request is answered with every node of the run", "[rdzv][status]") {
  RendezvousCore core(TestSettings());
  JoinLongNodes(core, 3);
  auto replies = SentTo<StatusReply>(AskStatus(core, "big"), kStatusConn);
  REQUIRE(replies.size() == 1);
  auto doc = nlohmann::json::parse(replies[0].json);
  REQUIRE(doc["runs"].size() == 1);
  CHECK(doc["runs"][0]["run_id"] == "big");
  CHECK(doc["runs"][0]["state"] == "gathering");
  CHECK(doc["runs"][0]["nodes"].size() == 3);
  CHECK(SentTo<StatusReply>(AskStatus(core, "other"), kStatusConn).size() == 1);
}

TEST_CASE("a status over the StatusReply bound is refused with an error, not sent",
          "[rdzv][status]") {
  RendezvousCore core(TestSettings());
  // About 8.3 KB of status per node: 1,100 nodes pass 8 MiB.
  JoinLongNodes(core, 1100);
  auto actions = AskStatus(core, "big");
  CHECK(SentTo<StatusReply>(actions, kStatusConn).empty());
  auto errors = SentTo<Error>(actions, kStatusConn);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].code == ErrorCode::kBadRequest);
  CHECK_FALSE(errors[0].fatal);
  CHECK_THAT(errors[0].message, Catch::Contains(std::to_string(kMaxStatusReplyFrameBytes)) &&
                                    Catch::Contains("--run-id"));
  // A smaller run's status still fits, frame bound included.
  RendezvousCore small(TestSettings());
  JoinLongNodes(small, 900);
  for (const Action& action : AskStatus(small, "big")) {
    const auto* frame = std::get_if<SendFrameAction>(&action);
    REQUIRE(frame != nullptr);
    CHECK(frame->frame->size() - kFrameLengthBytes > kDefaultMaxFrameBytes);
    CHECK(frame->frame->size() - kFrameLengthBytes <= kMaxStatusReplyFrameBytes);
  }
}
