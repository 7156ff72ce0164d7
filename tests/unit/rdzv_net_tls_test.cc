// TLS on the rendezvous connection: what loading refuses (naming the flag and
// the file), the file-mode rule, and the daemon shell over loopback with
// certificates made at run time: mutual TLS welcomes a certified agent,
// refuses one without a certificate, from another CA, with an expired one or
// speaking plain text (each one connection, counted, one log line naming the
// peer and the reason; the daemon serves on), and a client checks the
// daemon's certificate chains to its CA and names the host it dialled, the
// leader a standby names included.
#include <sys/stat.h>
#include <catch2/catch.hpp>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <csignal>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "rendezvous/client/rendezvous_client.h"
#include "rendezvous/daemon/rendezvous_server.h"
#include "rendezvous/net/tls_context.h"
#include "tests/unit/tls_test_certs.h"

namespace muster::rdzv {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
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

TlsClientFiles ClientFiles(const std::string& ca, const std::string& cert = "") {
  TlsClientFiles files;
  files.ca.path = Certs().Cert(ca);
  if (!cert.empty()) {
    files.cert.path = Certs().Cert(cert);
    files.key.path = Certs().Key(cert);
  }
  return files;
}

std::shared_ptr<const TlsContext> ServerTls(const std::string& cert, bool mutual) {
  TlsServerFiles files;
  files.cert.path = Certs().Cert(cert);
  files.key.path = Certs().Key(cert);
  if (mutual) files.client_ca.path = Certs().Cert("ca");
  auto made = TlsContext::ForServer(files, nullptr);
  REQUIRE(made.ok());
  return *made;
}

std::string ErrorOf(const Result<std::shared_ptr<const TlsContext>>& made) {
  REQUIRE_FALSE(made.ok());
  return made.status().message();
}

TEST_CASE("loading TLS files refuses what a connection would fail on, naming flag and file",
          "[rdzv][tls]") {
  TlsServerFiles server;
  server.cert.path = Certs().Cert("server");
  SECTION("a certificate without its key") {
    CHECK(ErrorOf(TlsContext::ForServer(server, nullptr)) ==
          "--tls-cert '" + server.cert.path + "' needs --tls-key");
  }
  SECTION("a file that is not there") {
    server.key.path = Certs().dir() + "/missing.key";
    CHECK(ErrorOf(TlsContext::ForServer(server, nullptr)) ==
          "--tls-key '" + server.key.path + "': cannot read it (No such file or directory)");
  }
  SECTION("a key that is not the certificate's") {
    server.key.path = Certs().Key("client");
    CHECK(ErrorOf(TlsContext::ForServer(server, nullptr)) ==
          "--tls-key '" + server.key.path + "' is not the key of --tls-cert '" + server.cert.path +
              "'");
  }
  SECTION("a certificate file that is not PEM") {
    server.cert.path = Certs().Key("server");
    server.key.path = Certs().Key("server");
    CHECK(ErrorOf(TlsContext::ForServer(server, nullptr))
              .starts_with("--tls-cert '" + server.cert.path + "': not a PEM certificate ("));
  }
  SECTION("a client CA with no certificate to serve") {
    TlsServerFiles only_ca;
    only_ca.client_ca.path = Certs().Cert("ca");
    CHECK(ErrorOf(TlsContext::ForServer(only_ca, nullptr)) ==
          "--tls-client-ca '" + only_ca.client_ca.path + "' needs --tls-cert and --tls-key");
  }
  SECTION("an agent's CA file that is not a certificate") {
    TlsClientFiles client;
    client.ca = {Certs().Key("ca"), "--rdzv-conf tls_ca"};
    CHECK(ErrorOf(TlsContext::ForClient(client, nullptr))
              .starts_with("--rdzv-conf tls_ca '" + client.ca.path + "': not a PEM certificate ("));
  }
}

TEST_CASE("key and token files readable by every user are warned about", "[rdzv][tls]") {
  CHECK_FALSE(ModeIsLoose(0100600));
  CHECK_FALSE(ModeIsLoose(0100640));  // the daemon's group may read it
  CHECK(ModeIsLoose(0100644));
  CHECK(ModeIsLoose(0100604));
  const std::string key = Certs().dir() + "/loose.key";
  std::filesystem::copy_file(Certs().Key("server"), key,
                             std::filesystem::copy_options::overwrite_existing);
  ::chmod(key.c_str(), 0644);
  CHECK(LooseFileWarning("--tls-key", key) ==
        "--tls-key '" + key + "' is readable by every user (mode 0644); chmod o-rwx it");
  std::vector<std::string> warnings;
  TlsServerFiles server;
  server.cert.path = Certs().Cert("server");
  server.key.path = key;
  REQUIRE(TlsContext::ForServer(server, &warnings).ok());
  CHECK(warnings.size() == 1);
  ::chmod(key.c_str(), 0600);
  CHECK_FALSE(LooseFileWarning("--tls-key", key).has_value());
}

// An agent's side: a channel that handshakes, then records what it hears.
struct Peer {
  std::shared_ptr<MessageChannel> channel;
  std::string handshake_failure;
  bool handshake_done = false;
  std::vector<Message> heard;
  std::string closed_why;
  bool closed = false;
  std::string local_addr;  // 127.0.0.1:PORT, as the daemon names this peer
};

std::shared_ptr<Peer> Connect(asio::io_context& io, uint16_t port,
                              std::shared_ptr<const TlsContext> tls,
                              const std::string& verify_host = "localhost") {
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::address_v4::loopback(), port});
  auto peer = std::make_shared<Peer>();
  peer->local_addr = "127.0.0.1:" + std::to_string(socket.local_endpoint().port());
  peer->channel =
      std::make_shared<MessageChannel>(std::move(socket), MessageChannel::Limits{},
                                       MessageChannel::BadInput::kClose, tls, verify_host);
  std::weak_ptr<Peer> weak = peer;
  peer->channel->Handshake([weak](const std::string& failure, ChannelEnd) {
    auto p = weak.lock();
    if (!p) return;
    p->handshake_done = true;
    p->handshake_failure = failure;
    if (!failure.empty()) return;
    p->channel->Start({[weak](Message m) {
                         if (auto q = weak.lock()) q->heard.push_back(std::move(m));
                       },
                       [weak](const std::string& why, ChannelEnd) {
                         if (auto q = weak.lock()) q->closed = true, q->closed_why = why;
                       },
                       nullptr});
    Hello hello;
    hello.agent_id = "host0:1:abc";
    p->channel->Send(hello);
  });
  return peer;
}

void RunUntil(asio::io_context& io, const std::function<bool()>& done) {
  const Time give_up = Clock::now() + 5s;
  while (!done() && Clock::now() < give_up) {
    io.restart();
    io.run_for(5ms);
  }
}

std::unique_ptr<RendezvousServer> StartServer(asio::io_context& io,
                                              std::shared_ptr<const TlsContext> tls) {
  ServerOptions options;
  options.host = "127.0.0.1";
  options.tls = std::move(tls);
  auto server = RendezvousServer::Start(io, options);
  REQUIRE(server.ok());
  return std::move(server).value();
}

bool Shows(const std::string& metrics, const std::string& line) {
  return metrics.find(line + "\n") != std::string::npos;
}

std::shared_ptr<const TlsContext> ClientTls(const TlsClientFiles& files) {
  auto made = TlsContext::ForClient(files, nullptr);
  REQUIRE(made.ok());
  return *made;
}

// The lines spdlog's default logger writes while this lives (the message
// only), where the daemon logs its events.
class LogLines {
 public:
  LogLines() : sink_(std::make_shared<spdlog::sinks::ostream_sink_st>(text_)) {
    sink_->set_pattern("%v");
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~LogLines() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LogLines(const LogLines&) = delete;
  LogLines& operator=(const LogLines&) = delete;

  // The lines that hold `part`, in order.
  std::vector<std::string> With(const std::string& part) const {
    std::vector<std::string> found;
    std::istringstream lines(text_.str());
    for (std::string line; std::getline(lines, line);) {
      if (line.find(part) != std::string::npos) found.push_back(line);
    }
    return found;
  }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_st> sink_;
};

TEST_CASE("mutual TLS welcomes a certified agent and refuses the others, serving on",
          "[rdzv][tls]") {
  asio::io_context io;
  auto server = StartServer(io, ServerTls("server", /*mutual=*/true));
  auto make_client = [](TlsClientFiles files) {
    auto made = TlsContext::ForClient(files, nullptr);
    REQUIRE(made.ok());
    return *made;
  };
  auto stranger = Connect(io, server->port(), make_client(ClientFiles("ca", "stranger")));
  auto anonymous = Connect(io, server->port(), make_client(ClientFiles("ca")));
  auto plain = Connect(io, server->port(), nullptr);
  RunUntil(io, [&] { return stranger->closed && anonymous->closed && !plain->heard.empty(); });
  // TLS 1.3: a client finishes its handshake before the server checks its
  // certificate; the refusal arrives as an alert on the first read.
  CHECK(stranger->closed_why.ends_with("alert unknown ca"));
  CHECK(anonymous->closed_why == "tlsv13 alert certificate required");
  REQUIRE(plain->heard.size() == 1);
  const auto* refusal = std::get_if<Error>(&plain->heard.front());
  REQUIRE(refusal != nullptr);
  CHECK(refusal->fatal);
  CHECK(refusal->message.starts_with("this rendezvous requires TLS"));
  RunUntil(io, [&] { return Shows(server->MetricsText(), "muster_tls_refused_total 3"); });
  CHECK(Shows(server->MetricsText(), "muster_tls_refused_total 3"));

  auto agent = Connect(io, server->port(), make_client(ClientFiles("ca", "client")));
  RunUntil(io, [&] { return !agent->heard.empty() || agent->closed; });
  CHECK(agent->handshake_failure.empty());
  REQUIRE(agent->heard.size() == 1);
  CHECK(std::holds_alternative<Welcome>(agent->heard.front()));
}

TEST_CASE("an agent refuses a daemon whose certificate does not name the host it dialled",
          "[rdzv][tls]") {
  asio::io_context io;
  auto server = StartServer(io, ServerTls("elsewhere", /*mutual=*/false));
  auto client = TlsContext::ForClient(ClientFiles("ca"), nullptr);
  REQUIRE(client.ok());
  auto by_name = Connect(io, server->port(), *client, "localhost");
  auto by_address = Connect(io, server->port(), *client, "127.0.0.1");
  RunUntil(io, [&] { return by_name->handshake_done && by_address->handshake_done; });
  CHECK(by_name->handshake_failure == "certificate verify failed: hostname mismatch");
  CHECK(by_address->handshake_failure == "certificate verify failed: IP address mismatch");

  // The right name passes: the server certificate names localhost and 127.0.0.1.
  auto right = StartServer(io, ServerTls("server", /*mutual=*/false));
  auto named = Connect(io, right->port(), *client, "127.0.0.1");
  RunUntil(io, [&] { return !named->heard.empty() || named->closed; });
  CHECK(named->handshake_failure.empty());
  REQUIRE(named->heard.size() == 1);
  CHECK(std::holds_alternative<Welcome>(named->heard.front()));
}

TEST_CASE("an agent refuses an endpoint whose identity no certificate can name", "[rdzv][tls]") {
  // OpenSSL cannot match an address with a zone against a certificate: the
  // chain alone would pass any certificate of the CA, so the handshake must
  // not start. The daemon's certificate here is valid for loopback; only the
  // dialled name is wrong.
  asio::io_context io;
  auto server = StartServer(io, ServerTls("server", /*mutual=*/false));
  auto client = TlsContext::ForClient(ClientFiles("ca"), nullptr);
  REQUIRE(client.ok());
  auto zoned = Connect(io, server->port(), *client, "fe80::1%lo");
  auto empty = Connect(io, server->port(), *client, "");
  RunUntil(io, [&] { return zoned->handshake_done && empty->handshake_done; });
  CHECK(zoned->handshake_failure.starts_with(
      "cannot check the server's identity for endpoint 'fe80::1%lo'"));
  CHECK(empty->handshake_failure.starts_with("cannot check the server's identity for endpoint ''"));
  CHECK(zoned->heard.empty());
}

TEST_CASE(
    "mutual TLS refuses an expired client certificate in the handshake, logs the peer and why, and "
    "serves on",
    "[rdzv][tls]") {
  // The certificate chains to the client CA and is the agent's; only its
  // validity ended (yesterday).
  LogLines log;
  asio::io_context io;
  auto server = StartServer(io, ServerTls("server", /*mutual=*/true));
  auto expired = Connect(io, server->port(), ClientTls(ClientFiles("ca", "expired")));
  RunUntil(io, [&] { return expired->closed || !expired->handshake_failure.empty(); });
  CHECK(expired->closed_why.ends_with("alert certificate expired"));
  CHECK(expired->heard.empty());  // no Welcome, nor any other message
  RunUntil(io, [&] { return !log.With("event=tls_refused").empty(); });
  CHECK(log.With("event=tls_refused") ==
        std::vector<std::string>{"event=tls_refused peer=" + expired->local_addr +
                                 " why=\"certificate verify failed: certificate has expired\""});
  CHECK(Shows(server->MetricsText(), "muster_tls_refused_total 1"));

  auto agent = Connect(io, server->port(), ClientTls(ClientFiles("ca", "client")));
  RunUntil(io, [&] { return !agent->heard.empty() || agent->closed; });
  REQUIRE(agent->heard.size() == 1);
  CHECK(std::holds_alternative<Welcome>(agent->heard.front()));
  CHECK(log.With("event=tls_refused").size() == 1);
}

TEST_CASE("each refusal under mutual TLS is one log line naming the peer and the reason",
          "[rdzv][tls]") {
  LogLines log;
  asio::io_context io;
  auto server = StartServer(io, ServerTls("server", /*mutual=*/true));
  // One at a time, so that each line is the one of the peer just refused.
  auto refuse = [&](std::shared_ptr<const TlsContext> tls) {
    const size_t before = log.With("event=tls_refused").size();
    auto peer = Connect(io, server->port(), std::move(tls));
    RunUntil(io, [&] { return log.With("event=tls_refused").size() > before; });
    const std::vector<std::string> lines = log.With("event=tls_refused");
    REQUIRE(lines.size() == before + 1);
    const std::string prefix = "event=tls_refused peer=" + peer->local_addr + " why=";
    REQUIRE(lines.back().starts_with(prefix));
    return lines.back().substr(prefix.size());
  };
  CHECK(refuse(ClientTls(ClientFiles("ca"))) == "\"peer did not return a certificate\"");
  CHECK(refuse(ClientTls(ClientFiles("ca", "stranger"))) ==
        "\"certificate verify failed: unable to get local issuer certificate\"");
  CHECK(refuse(nullptr) == "\"the peer spoke plain text\"");
  CHECK(Shows(server->MetricsText(), "muster_tls_refused_total 3"));
}

TEST_CASE("an agent refuses a daemon whose certificate names the host but chains to another CA",
          "[rdzv][tls]") {
  // other_server names localhost and 127.0.0.1, as a daemon's must: only its
  // CA is not the agent's tls_ca.
  asio::io_context io;
  auto server = StartServer(io, ServerTls("other_server", /*mutual=*/false));
  auto by_name = Connect(io, server->port(), ClientTls(ClientFiles("ca")), "localhost");
  auto by_address = Connect(io, server->port(), ClientTls(ClientFiles("ca")), "127.0.0.1");
  RunUntil(io, [&] { return by_name->handshake_done && by_address->handshake_done; });
  CHECK(by_name->handshake_failure ==
        "certificate verify failed: unable to get local issuer certificate");
  CHECK(by_address->handshake_failure == by_name->handshake_failure);
  CHECK(by_name->heard.empty());

  // The same daemon passes for an agent whose tls_ca is the one it chains to.
  auto trusting = Connect(io, server->port(), ClientTls(ClientFiles("other_ca")), "localhost");
  RunUntil(io, [&] { return !trusting->heard.empty() || trusting->closed; });
  CHECK(trusting->handshake_failure.empty());
  REQUIRE(trusting->heard.size() == 1);
  CHECK(std::holds_alternative<Welcome>(trusting->heard.front()));
}

// A replica at 127.0.0.1 that does not lead: it answers every Hello with
// not_leader, naming `leader` (as the leader advertised itself).
std::unique_ptr<RendezvousServer> StartStandby(asio::io_context& io, const std::string& leader) {
  auto standby = StartServer(io, ServerTls("server", /*mutual=*/false));
  ReplicaStatus status;
  status.replicated = true;
  status.role = replica::Role::kStandby;
  status.epoch = 3;
  status.leader = leader;
  status.fresh = true;
  status.view_read_at = Clock::now();
  status.self = "127.0.0.1:" + std::to_string(standby->port());
  standby->SetReplicaStatus(status);
  return standby;
}

std::unique_ptr<RendezvousServer> StartLeader(asio::io_context& io, const std::string& cert) {
  auto leader = StartServer(io, ServerTls(cert, /*mutual=*/false));
  ReplicaStatus status;
  status.replicated = true;
  status.leading = true;
  status.role = replica::Role::kLeader;
  status.epoch = 3;
  status.lead_until = Clock::now() + 60s;
  status.self = "localhost:" + std::to_string(leader->port());
  status.leader = status.self;
  status.fresh = true;
  status.view_read_at = Clock::now();
  leader->SetReplicaStatus(status);
  return leader;
}

// What an agent dialling only `standby_port` ends with: the first of a
// fatal refusal, or "waiting" once some leader took its Join.
std::string FollowStandby(asio::io_context& io, uint16_t standby_port) {
  ClientOptions options;
  options.endpoints = {Endpoint{"127.0.0.1", standby_port}};
  options.join.run_id = "replicas";
  options.join.node_id = "host0:1:abc";
  options.join.host = "host0";
  options.join.min_nodes = 2;
  options.join.max_nodes = 2;
  std::optional<std::string> ended;
  RendezvousClient::Callbacks callbacks;
  callbacks.on_fatal = [&](const std::string& message) {
    if (!ended) ended = message;
  };
  callbacks.on_waiting = [&](const std::string&) {
    if (!ended) ended = "waiting";
  };
  RendezvousClient client(io, options, callbacks, ClientTls(ClientFiles("ca")));
  client.Start();
  RunUntil(io, [&] { return ended.has_value(); });
  client.Stop();
  return ended.value_or("nothing within 5 s");
}

TEST_CASE("an agent following a standby checks the leader's certificate names the advertised host",
          "[rdzv][tls]") {
  // The leader advertises localhost:PORT; its certificate, from the agent's
  // CA, names only elsewhere.invalid. The agent dials the standby by address
  // (whose certificate is right) and must refuse the leader it is sent to.
  asio::io_context io;
  auto misnamed = StartLeader(io, "elsewhere");
  const std::string misnamed_at = "localhost:" + std::to_string(misnamed->port());
  auto standby = StartStandby(io, misnamed_at);
  CHECK(FollowStandby(io, standby->port()) ==
        "TLS with the rendezvous at " + misnamed_at +
            " failed: certificate verify failed: hostname mismatch");

  // A leader whose certificate names its advertised host is followed.
  auto named = StartLeader(io, "server");
  auto standby_of_named = StartStandby(io, "localhost:" + std::to_string(named->port()));
  CHECK(FollowStandby(io, standby_of_named->port()) == "waiting");
}

}  // namespace
}  // namespace muster::rdzv
