// The status document the daemon sends: its exact JSON (what `muster status`
// and the integration tests parse), and the bound on its frame (the one
// frame allowed over 1 MiB, up to kMaxStatusReplyFrameBytes).
#include <catch2/catch.hpp>

#include "rendezvous/daemon/status_json.h"
#include "rendezvous/daemon/status_reply.h"
#include "tests/unit/rdzv_state_test_support.h"

using namespace muster::rdzv;
using namespace muster::rdzv::testing;

namespace {

// The message a whole frame holds.
Message DecodeFrame(const std::string& bytes) {
  FrameDecoder decoder(kMaxStatusReplyFrameBytes);
  decoder.Feed(bytes);
  FrameResult frame = decoder.Next();
  REQUIRE(frame.state == FrameResult::kFrame);
  auto message = Decode(frame.type, frame.payload);
  REQUIRE(message.ok());
  return std::move(message).value();
}

// A run that waits for more nodes (MIN above n) with `n` nodes of the
// longest ids the protocol allows: about 8.3 KB of status per node.
StatusSnapshot LongNodes(int n) {
  RendezvousCore core(TestSettings());
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
  return core.Status("", Time{});
}

}  // namespace

TEST_CASE("the status document is the documented JSON, byte for byte", "[rdzv][status]") {
  // A running run (a member disconnected, one standing by) and an ended one.
  FakeCluster c(2, 3, 1);
  c.AddAgent(2);
  c.AddAgent(1);
  c.AddAgent(4);
  c.JoinAll();
  c.AddAgent(1);
  c.Join(3);
  c.Advance(Duration(300));
  c.Heartbeat(0);
  c.Advance(Duration(40));
  c.Disconnect(1);
  Join j;
  j.run_id = "done";
  j.node_id = "solo";
  j.host = "h9";
  j.local_world_size = 3;
  j.store_addr = "10.9";
  j.store_port = 29999;
  c.core().Handle(MessageEvent{900, j}, c.now());
  c.core().Handle(MessageEvent{900, WorkersSucceeded{"done", "solo", 1}}, c.now());

  // Runs by run id; keys in byte order; members by group rank, then waiting
  // nodes; an ended run with its result and message.
  CHECK(
      StatusJson(c.core().Status("", c.now())) ==
      R"({"runs":[)"
      R"({"generation":1,"max_nodes":1,"max_restarts":0,"message":"every worker succeeded","min_nodes":1,"nodes":[)"
      R"({"connected":true,"global_ranks":[0,2],"group_rank":0,"heartbeat_age_ms":0,"host":"h9","local_world_size":3,"node_id":"solo","state":"member","straggler":false}],"restart_count":0,"result":"succeeded","run_id":"done","state":"ended","stragglers":0},)"
      R"({"generation":1,"max_nodes":3,"max_restarts":1,"min_nodes":2,"nodes":[)"
      R"({"connected":true,"global_ranks":[0,1],"group_rank":0,"heartbeat_age_ms":40,"host":"host0","local_world_size":2,"node_id":"node0","state":"member","straggler":false},)"
      R"({"connected":false,"global_ranks":[2,2],"group_rank":1,"heartbeat_age_ms":340,"host":"host1","local_world_size":1,"node_id":"node1","state":"member","straggler":false},)"
      R"({"connected":true,"global_ranks":[3,6],"group_rank":2,"heartbeat_age_ms":340,"host":"host2","local_world_size":4,"node_id":"node2","state":"member","straggler":false},)"
      R"({"connected":true,"heartbeat_age_ms":340,"host":"host3","local_world_size":1,"node_id":"node3","state":"waiting"}],"restart_count":0,"run_id":"job","state":"running","stragglers":0}]})");
}

TEST_CASE("a status that fits is sent as a StatusReply holding the document", "[rdzv][status]") {
  const StatusSnapshot snapshot = LongNodes(3);
  const Message reply = DecodeFrame(StatusReplyFrame(snapshot));
  REQUIRE(std::holds_alternative<StatusReply>(reply));
  CHECK(std::get<StatusReply>(reply).json == StatusJson(snapshot));
}

TEST_CASE("a status over the StatusReply bound is refused with an error, not sent",
          "[rdzv][status]") {
  // 1,100 nodes pass 8 MiB.
  const Message refused = DecodeFrame(StatusReplyFrame(LongNodes(1100)));
  REQUIRE(std::holds_alternative<Error>(refused));
  const Error& error = std::get<Error>(refused);
  CHECK(error.code == ErrorCode::kBadRequest);
  CHECK_FALSE(error.fatal);
  CHECK_THAT(error.message, Catch::Contains(std::to_string(kMaxStatusReplyFrameBytes)) &&
                                Catch::Contains("--run-id"));
  // A smaller run's status still fits, frame bound included.
  const std::string frame = StatusReplyFrame(LongNodes(900));
  CHECK(frame.size() - kFrameLengthBytes > kDefaultMaxFrameBytes);
  CHECK(frame.size() - kFrameLengthBytes <= kMaxStatusReplyFrameBytes);
  CHECK(std::holds_alternative<StatusReply>(DecodeFrame(frame)));
}
