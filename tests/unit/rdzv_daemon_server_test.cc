// The daemon shell (rendezvous_server.h) carrying out the hello gate's and
// the lead change's decisions, on loopback within one io_context: what an
// agent's first message gets, a standby's redirect, a change of lead, and
// the counters metrics show of them.
#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "rendezvous/daemon/rendezvous_server.h"

namespace muster::rdzv {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// An agent's connection to the server, recording what it hears.
struct Peer {
  std::shared_ptr<MessageChannel> channel;
  std::vector<Message> heard;
  bool closed = false;
};

std::shared_ptr<Peer> Connect(asio::io_context& io, uint16_t port) {
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::address_v4::loopback(), port});
  auto peer = std::make_shared<Peer>();
  peer->channel = std::make_shared<MessageChannel>(std::move(socket), MessageChannel::Limits{},
                                                   MessageChannel::BadInput::kClose);
  std::weak_ptr<Peer> weak = peer;
  peer->channel->Start({[weak](Message m) {
                          if (auto p = weak.lock()) p->heard.push_back(std::move(m));
                        },
                        [weak](const std::string&, ChannelEnd) {
                          if (auto p = weak.lock()) p->closed = true;
                        },
                        nullptr});
  return peer;
}

// Runs the loop until `done` or two seconds pass.
void RunUntil(asio::io_context& io, const std::function<bool()>& done) {
  const Time give_up = Clock::now() + 2s;
  while (!done() && Clock::now() < give_up) {
    io.restart();
    io.run_for(5ms);
  }
}

// The first message `hello` gets, and whether the connection closed after it.
std::shared_ptr<Peer> Greet(asio::io_context& io, uint16_t port, Hello hello) {
  auto peer = Connect(io, port);
  peer->channel->Send(hello);
  RunUntil(io, [&] { return !peer->heard.empty(); });
  REQUIRE(peer->heard.size() == 1);
  return peer;
}

Hello WithToken(std::string token) {
  Hello hello;
  hello.token = std::move(token);
  hello.agent_id = "host0:1:abc";
  return hello;
}

std::unique_ptr<RendezvousServer> StartServer(asio::io_context& io) {
  ServerOptions options;
  options.host = "127.0.0.1";
  options.token = "secret";
  auto server = RendezvousServer::Start(io, options);
  REQUIRE(server.ok());
  return std::move(server).value();
}

bool Shows(const std::string& metrics, const std::string& line) {
  return metrics.find(line + "\n") != std::string::npos;
}

TEST_CASE("the shell refuses a bad Hello and closes, counting it", "[rdzv][daemon]") {
  asio::io_context io;
  auto server = StartServer(io);
  auto peer = Greet(io, server->port(), WithToken("wrong"));
  const auto* error = std::get_if<Error>(&peer->heard.front());
  REQUIRE(error != nullptr);
  CHECK(error->code == ErrorCode::kBadToken);
  CHECK(error->fatal);
  RunUntil(io, [&] { return peer->closed; });
  CHECK(peer->closed);
  CHECK(Shows(server->MetricsText(), "muster_refused_hellos_total 1"));
}

TEST_CASE("the shell welcomes a good Hello and keeps the connection", "[rdzv][daemon]") {
  asio::io_context io;
  auto server = StartServer(io);
  auto peer = Greet(io, server->port(), WithToken("secret"));
  const auto* welcome = std::get_if<Welcome>(&peer->heard.front());
  REQUIRE(welcome != nullptr);
  CHECK(welcome->epoch == 0);
  CHECK_FALSE(peer->closed);
  CHECK(Shows(server->MetricsText(), "muster_replica_role{role=\"standalone\"} 1"));
  CHECK(Shows(server->MetricsText(), "muster_connections 1"));
}

TEST_CASE("a peer that sends a 64 KiB frame before its Hello is closed, after it 64 KiB are read",
          "[rdzv][daemon]") {
  asio::io_context io;
  auto server = StartServer(io);
  // The right token, in a Hello padded past the 16 KiB a stranger may send.
  Hello padded = WithToken("secret");
  padded.agent_id = std::string(64 << 10, 'a');
  auto stranger = Connect(io, server->port());
  REQUIRE(stranger->channel->Send(padded));
  RunUntil(io, [&] { return stranger->closed; });
  CHECK(stranger->closed);
  REQUIRE(stranger->heard.size() == 1);
  const auto* error = std::get_if<Error>(&stranger->heard.front());
  REQUIRE(error != nullptr);
  CHECK(error->code == ErrorCode::kBadFrame);
  CHECK(error->message.find("first frame") != std::string::npos);

  // A greeted agent's frames are held to the full bound: a 64 KiB frame is
  // read whole and judged by its content (a run id past 4096 bytes).
  auto agent = Greet(io, server->port(), WithToken("secret"));
  REQUIRE(std::holds_alternative<Welcome>(agent->heard.front()));
  REQUIRE(agent->channel->Send(StatusRequest{std::string(64 << 10, 'r')}));
  RunUntil(io, [&] { return agent->heard.size() == 2; });
  REQUIRE(agent->heard.size() == 2);
  const auto* judged = std::get_if<Error>(&agent->heard.back());
  REQUIRE(judged != nullptr);
  CHECK(judged->message.find("oversized") == std::string::npos);
  CHECK(judged->message.find("at most 4096 bytes") != std::string::npos);
}

TEST_CASE("a standby redirects to the leader, and a change of lead drops every connection",
          "[rdzv][daemon]") {
  asio::io_context io;
  auto server = StartServer(io);
  ReplicaStatus standby;
  standby.replicated = true;
  standby.role = replica::Role::kStandby;
  standby.leader = "10.0.0.1:29400";
  standby.epoch = 4;
  standby.fresh = true;
  standby.view_read_at = Clock::now();
  standby.self = "10.0.0.2:29400";
  server->SetReplicaStatus(standby);
  CHECK(Shows(server->MetricsText(), "muster_replica_role{role=\"standby\"} 1"));

  auto redirected = Greet(io, server->port(), WithToken("secret"));
  const auto* error = std::get_if<Error>(&redirected->heard.front());
  REQUIRE(error != nullptr);
  CHECK(error->code == ErrorCode::kNotLeader);
  CHECK(error->leader == "10.0.0.1:29400");
  CHECK(error->epoch == 4);
  CHECK_FALSE(error->fatal);
  RunUntil(io, [&] { return redirected->closed; });
  CHECK(redirected->closed);
  CHECK(Shows(server->MetricsText(), "muster_refused_hellos_total 0"));  // not a bad Hello

  ReplicaStatus leader = standby;
  leader.leading = true;
  leader.role = replica::Role::kLeader;
  leader.epoch = 5;
  leader.leader = standby.self;
  leader.lead_until = Clock::now() + 60s;
  server->SetReplicaStatus(leader);
  auto welcomed = Greet(io, server->port(), WithToken("secret"));
  const auto* welcome = std::get_if<Welcome>(&welcomed->heard.front());
  REQUIRE(welcome != nullptr);
  CHECK(welcome->epoch == 5);
  CHECK(Shows(server->MetricsText(), "muster_replica_leader_changes_total 1"));

  // Stepping down closes the leader's connections.
  server->SetReplicaStatus(standby);
  RunUntil(io, [&] { return welcomed->closed; });
  CHECK(welcomed->closed);
  CHECK(Shows(server->MetricsText(), "muster_replica_leader_changes_total 2"));

  // The status page shows who leads, and both changes among the recent events.
  const StatusSnapshot page = server->PageSnapshot();
  REQUIRE(page.replica.has_value());
  CHECK(page.replica->role == "standby");
  CHECK(page.replica->leader == "10.0.0.1:29400");
  REQUIRE(page.events.size() == 2);
  for (const EventStatus& event : page.events) CHECK(event.kind == "lead_change");
  CHECK_THAT(page.events[0].text, Catch::StartsWith("leader (epoch 5"));
  CHECK_THAT(page.events[1].text, Catch::StartsWith("standby (epoch 4, leader 10.0.0.1:29400)"));
}

TEST_CASE("a lead that arrives after its deadline is taken as a standby's", "[rdzv][daemon]") {
  asio::io_context io;
  auto server = StartServer(io);
  ReplicaStatus late;
  late.replicated = true;
  late.leading = true;
  late.role = replica::Role::kLeader;
  late.lead_until = Clock::now() - 1ms;
  server->SetReplicaStatus(late);
  CHECK_FALSE(server->replica_status().leading);
  CHECK(server->replica_status().role == replica::Role::kStandby);
  CHECK(Shows(server->MetricsText(), "muster_replica_leader_changes_total 0"));
}

}  // namespace
}  // namespace muster::rdzv
