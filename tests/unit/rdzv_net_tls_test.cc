// TLS on the rendezvous connection: what loading refuses (naming the flag and
// the file), the file-mode rule, and the daemon shell over loopback with
// certificates made at run time: mutual TLS welcomes a certified agent,
// refuses one without a certificate, from another CA or speaking plain text
// (each one connection, counted; the daemon serves on), and a client checks
// the daemon's certificate names the host it dialled.
#include <sys/stat.h>
#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <csignal>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
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
};

std::shared_ptr<Peer> Connect(asio::io_context& io, uint16_t port,
                              std::shared_ptr<const TlsContext> tls,
                              const std::string& verify_host = "localhost") {
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::address_v4::loopback(), port});
  auto peer = std::make_shared<Peer>();
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

}  // namespace
}  // namespace muster::rdzv
