// The daemon shell's listener against peers that cost it something before
// they are refused (docs/security.md): connections past --max-connections,
// TLS handshakes that never finish, a wrong token under TLS, and accepts
// that fail for want of a descriptor. On loopback, within one io_context.
#include <catch2/catch.hpp>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <csignal>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "rendezvous/daemon/rendezvous_server.h"
#include "tests/unit/full_descriptor_table.h"
#include "tests/unit/tls_test_certs.h"

namespace muster::rdzv {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using testing::FullDescriptorTable;
using testing::ThreadCpuSeconds;
using testing::TlsTestCerts;

// OpenSSL writes with write(2): a refused client's Hello may meet a closed
// socket, which must not kill the test (muster and musterd ignore SIGPIPE).
const bool kSigpipeIgnored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();

const TlsTestCerts& Certs() {
  static const TlsTestCerts certs;
  return certs;
}

std::shared_ptr<const TlsContext> ServerTls() {
  TlsServerFiles files;
  files.cert.path = Certs().Cert("server");
  files.key.path = Certs().Key("server");
  auto made = TlsContext::ForServer(files, nullptr);
  REQUIRE(made.ok());
  return *made;
}

std::shared_ptr<const TlsContext> ClientTls() {
  TlsClientFiles files;
  files.ca.path = Certs().Cert("ca");
  auto made = TlsContext::ForClient(files, nullptr);
  REQUIRE(made.ok());
  return *made;
}

// An agent's connection: it handshakes (TLS) or not (plain), sends `hello`,
// and records what it hears and whether the daemon closed it.
struct Agent {
  std::shared_ptr<MessageChannel> channel;
  std::string handshake_failure;
  std::vector<Message> heard;
  bool closed = false;
};

std::shared_ptr<Agent> ConnectAgent(asio::ip::tcp::socket socket, const Hello& hello,
                                    std::shared_ptr<const TlsContext> tls = nullptr) {
  auto agent = std::make_shared<Agent>();
  agent->channel =
      std::make_shared<MessageChannel>(std::move(socket), MessageChannel::Limits{},
                                       MessageChannel::BadInput::kClose, tls, "127.0.0.1");
  std::weak_ptr<Agent> weak = agent;
  agent->channel->Handshake([weak, hello](const std::string& failure, ChannelEnd) {
    auto a = weak.lock();
    if (!a) return;
    a->handshake_failure = failure;
    if (!failure.empty()) {
      a->closed = true;
      return;
    }
    a->channel->Start({[weak](Message m) {
                         if (auto b = weak.lock()) b->heard.push_back(std::move(m));
                       },
                       [weak](const std::string&, ChannelEnd) {
                         if (auto b = weak.lock()) b->closed = true;
                       },
                       nullptr});
    a->channel->Send(hello);
  });
  return agent;
}

std::shared_ptr<Agent> ConnectAgent(asio::io_context& io, uint16_t port, const Hello& hello,
                                    std::shared_ptr<const TlsContext> tls = nullptr) {
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::address_v4::loopback(), port});
  return ConnectAgent(std::move(socket), hello, std::move(tls));
}

Hello WithToken(std::string token) {
  Hello hello;
  hello.token = std::move(token);
  hello.agent_id = "host0:1:abc";
  return hello;
}

// Runs the loop until `done` or five seconds pass.
void RunUntil(asio::io_context& io, const std::function<bool()>& done) {
  const Time give_up = Clock::now() + 5s;
  while (!done() && Clock::now() < give_up) {
    io.restart();
    io.run_for(5ms);
  }
}

std::unique_ptr<RendezvousServer> StartServer(asio::io_context& io, ServerOptions options) {
  options.host = "127.0.0.1";
  auto server = RendezvousServer::Start(io, std::move(options));
  REQUIRE(server.ok());
  return std::move(server).value();
}

bool Shows(const std::string& metrics, const std::string& line) {
  return metrics.find(line + "\n") != std::string::npos;
}

// A raw TCP connection that reads until the daemon closes it.
struct RawPeer {
  explicit RawPeer(asio::io_context& io, uint16_t port) : socket(io) {
    socket.connect({asio::ip::address_v4::loopback(), port});
  }
  void ReadUntilClosed() {
    socket.async_read_some(asio::buffer(chunk),
                           [this](const boost::system::error_code& ec, size_t) {
                             if (ec) {
                               closed_at = Clock::now();
                               closed = true;
                             } else {
                               ReadUntilClosed();
                             }
                           });
  }
  asio::ip::tcp::socket socket;
  std::array<char, 256> chunk{};
  bool closed = false;
  Time closed_at;
};

TEST_CASE("past --max-connections a new connection is closed, and the ones held are served",
          "[rdzv][daemon][listener]") {
  CHECK(ServerOptions{}.max_connections == 20000);
  asio::io_context io;
  ServerOptions options;
  options.max_connections = 3;
  auto server = StartServer(io, options);
  std::vector<std::shared_ptr<Agent>> held;
  for (int i = 0; i < 3; ++i) held.push_back(ConnectAgent(io, server->port(), WithToken("")));
  RunUntil(io, [&] {
    for (const auto& agent : held) {
      if (agent->heard.empty()) return false;
    }
    return true;
  });
  for (const auto& agent : held) {
    REQUIRE(agent->heard.size() == 1);
    CHECK(std::holds_alternative<Welcome>(agent->heard.front()));
  }

  auto extra = ConnectAgent(io, server->port(), WithToken(""));
  RunUntil(io, [&] { return extra->closed; });
  CHECK(extra->closed);
  CHECK(extra->heard.empty());  // closed at accept: not even a refusal is sent
  CHECK(Shows(server->MetricsText(), "muster_rejected_connections_total 1"));
  CHECK(Shows(server->MetricsText(), "muster_connections 3"));

  // The connections held are unaffected: each still gets its answers.
  for (const auto& agent : held) agent->channel->Send(StatusRequest{});
  RunUntil(io, [&] {
    for (const auto& agent : held) {
      if (agent->heard.size() < 2) return false;
    }
    return true;
  });
  for (const auto& agent : held) {
    REQUIRE(agent->heard.size() == 2);
    CHECK(std::holds_alternative<StatusReply>(agent->heard.back()));
    CHECK_FALSE(agent->closed);
  }

  // The cap counts open connections: one closed leaves room for the next.
  held.front()->channel->Close("leaving");
  RunUntil(io, [&] { return Shows(server->MetricsText(), "muster_connections 2"); });
  auto next = ConnectAgent(io, server->port(), WithToken(""));
  RunUntil(io, [&] { return !next->heard.empty() || next->closed; });
  REQUIRE(next->heard.size() == 1);
  CHECK(std::holds_alternative<Welcome>(next->heard.front()));
  CHECK(Shows(server->MetricsText(), "muster_rejected_connections_total 1"));
}

TEST_CASE("a TLS handshake that never completes is closed after hello_timeout, serving on",
          "[rdzv][daemon][listener][tls]") {
  asio::io_context io;
  ServerOptions options;
  options.tls = ServerTls();
  options.settings.hello_timeout = Duration{300};
  auto server = StartServer(io, options);
  const Time opened = Clock::now();
  RawPeer silent(io, server->port());
  RawPeer half(io, server->port());
  // A TLS record header announcing a 512-byte ClientHello, and its first bytes.
  const std::string half_hello("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
  asio::write(half.socket, asio::buffer(half_hello));
  silent.ReadUntilClosed();
  half.ReadUntilClosed();
  RunUntil(io, [&] { return silent.closed && half.closed; });
  REQUIRE(silent.closed);
  REQUIRE(half.closed);
  // Closed by the sweep (once a second) once hello_timeout has passed.
  for (const Time closed_at : {silent.closed_at, half.closed_at}) {
    CHECK(closed_at - opened >= options.settings.hello_timeout);
    CHECK(closed_at - opened < options.settings.hello_timeout + 1500ms);
  }
  CHECK(Shows(server->MetricsText(), "muster_connections 0"));

  // The daemon goes on: an agent that completes its handshake is welcomed.
  auto agent = ConnectAgent(io, server->port(), WithToken(""), ClientTls());
  RunUntil(io, [&] { return !agent->heard.empty() || agent->closed; });
  CHECK(agent->handshake_failure.empty());
  REQUIRE(agent->heard.size() == 1);
  CHECK(std::holds_alternative<Welcome>(agent->heard.front()));
}

TEST_CASE("with TLS and a token, a wrong token is refused at its first message",
          "[rdzv][daemon][listener][tls]") {
  asio::io_context io;
  ServerOptions options;
  options.tls = ServerTls();
  options.token = "secret";
  auto server = StartServer(io, options);

  auto wrong = ConnectAgent(io, server->port(), WithToken("guess"), ClientTls());
  auto none = ConnectAgent(io, server->port(), WithToken(""), ClientTls());
  RunUntil(io, [&] { return wrong->closed && none->closed; });
  CHECK(wrong->handshake_failure.empty());  // TLS let it in; the token did not
  REQUIRE(wrong->heard.size() == 1);
  const auto* refusal = std::get_if<Error>(&wrong->heard.front());
  REQUIRE(refusal != nullptr);
  CHECK(refusal->code == ErrorCode::kBadToken);
  CHECK(refusal->message == "wrong token");
  CHECK(refusal->fatal);
  REQUIRE(none->heard.size() == 1);
  const auto* missing = std::get_if<Error>(&none->heard.front());
  REQUIRE(missing != nullptr);
  CHECK(missing->code == ErrorCode::kBadToken);
  CHECK(missing->message == "this daemon requires a token (--token-file)");
  CHECK(Shows(server->MetricsText(), "muster_refused_hellos_total 2"));
  CHECK(Shows(server->MetricsText(), "muster_tls_refused_total 0"));

  auto right = ConnectAgent(io, server->port(), WithToken("secret"), ClientTls());
  RunUntil(io, [&] { return !right->heard.empty() || right->closed; });
  REQUIRE(right->heard.size() == 1);
  CHECK(std::holds_alternative<Welcome>(right->heard.front()));
  CHECK_FALSE(right->closed);
}

TEST_CASE("out of descriptors the rendezvous acceptor pauses instead of spinning, and recovers",
          "[rdzv][daemon][listener]") {
  asio::io_context io;
  auto server = StartServer(io, ServerOptions{});
  asio::ip::tcp::socket client(io);
  client.open(asio::ip::tcp::v4());  // its descriptor, before the table is full
  FullDescriptorTable full;
  // The kernel completes the connection into the backlog; accept fails.
  client.connect({asio::ip::address_v4::loopback(), server->port()});

  const double cpu_before = ThreadCpuSeconds();
  io.run_for(500ms);
  const double cpu = ThreadCpuSeconds() - cpu_before;
  // A spinning acceptor burns the whole half second; a pausing one retries
  // about every AcceptRetry::kPause (the daemon's 50 ms tick costs little).
  CHECK(cpu < 0.05);
  CHECK(server->accept_pauses() >= 2);
  CHECK(server->accept_pauses() <= 8);

  full.Free();
  auto agent = ConnectAgent(std::move(client), WithToken(""));
  RunUntil(io, [&] { return !agent->heard.empty() || agent->closed; });
  REQUIRE(agent->heard.size() == 1);
  CHECK(std::holds_alternative<Welcome>(agent->heard.front()));
}

}  // namespace
}  // namespace muster::rdzv
