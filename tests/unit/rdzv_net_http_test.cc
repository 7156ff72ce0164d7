// The small HTTP endpoints: reading a request head, the token rule (Bearer
// and a browser's Basic), query values, the answer's bytes; and HttpServer
// on loopback, plain and over TLS, where a request without the token gets
// 401 and never reaches the handler, and a plain-text client on the HTTPS
// port is told so.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <csignal>
#include <functional>
#include <string>
#include <vector>

#include "rendezvous/net/http_server.h"
#include "rendezvous/net/tls_stream.h"
#include "tests/unit/full_descriptor_table.h"
#include "tests/unit/tls_test_certs.h"

namespace muster::rdzv {
namespace {

namespace asio = boost::asio;
using testing::FullDescriptorTable;
using testing::ThreadCpuSeconds;
using testing::TlsTestCerts;

const bool kSigpipeIgnored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();

TEST_CASE("a request head gives method, path, query and Authorization", "[rdzv][http]") {
  const auto request = ParseHttpRequestHead(
      "GET /status.json?run=a&offset=10 HTTP/1.1\r\nHost: x\r\nauthorization:  Bearer s3cret \r\n");
  REQUIRE(request);
  CHECK(request->method == "GET");
  CHECK(request->path == "/status.json");
  CHECK(request->query == "run=a&offset=10");
  CHECK(request->authorization == "Bearer s3cret");

  CHECK_FALSE(ParseHttpRequestHead("GET /x\r\n"));
  CHECK_FALSE(ParseHttpRequestHead("GET x HTTP/1.1\r\n"));
  CHECK_FALSE(ParseHttpRequestHead("GET / SPDY/3\r\n"));
}

TEST_CASE("the token is presented as Bearer or as a Basic password", "[rdzv][http]") {
  CHECK(HttpAuthorized("", ""));
  CHECK(HttpAuthorized("Bearer anything", ""));
  CHECK(HttpAuthorized("Bearer s3cret", "s3cret"));
  CHECK(HttpAuthorized("bearer s3cret", "s3cret"));
  CHECK_FALSE(HttpAuthorized("Bearer s3cre", "s3cret"));
  CHECK_FALSE(HttpAuthorized("Bearer s3cretX", "s3cret"));
  CHECK_FALSE(HttpAuthorized("", "s3cret"));
  CHECK_FALSE(HttpAuthorized("s3cret", "s3cret"));
  CHECK(HttpAuthorized("Basic b3BzOnMzY3JldA==", "s3cret"));  // ops:s3cret
  CHECK(HttpAuthorized("Basic OnMzY3JldA==", "s3cret"));      // :s3cret
  CHECK_FALSE(HttpAuthorized("Basic czNjcmV0", "s3cret"));    // s3cret, no colon
  CHECK_FALSE(HttpAuthorized("Basic !!!!", "s3cret"));
  CHECK_FALSE(HttpAuthorized("Digest s3cret", "s3cret"));
}

TEST_CASE("query values are found by name and decoded", "[rdzv][http]") {
  CHECK(HttpQueryValue("run=a%20b&offset=10", "run") == "a b");
  CHECK(HttpQueryValue("run=a+b", "run") == "a b");
  CHECK(HttpQueryValue("run=a&offset=10", "offset") == "10");
  CHECK(HttpQueryValue("flag&run=x", "flag") == "");
  CHECK_FALSE(HttpQueryValue("run=a", "limit"));
  CHECK(HttpQueryValue("bad=%zz", "bad") == "%zz");
}

TEST_CASE("an answer carries its length, no caching, and a 401 asks for the token",
          "[rdzv][http]") {
  const std::string ok = FormatHttpResponse({200, "text/plain", "hello"}, false);
  CHECK(ok.starts_with("HTTP/1.0 200 OK\r\n"));
  CHECK(ok.find("Content-Length: 5\r\n") != std::string::npos);
  CHECK(ok.find("Cache-Control: no-store\r\n") != std::string::npos);
  CHECK(ok.ends_with("\r\n\r\nhello"));
  CHECK(FormatHttpResponse({200, "text/plain", "hello"}, true).ends_with("\r\n\r\n"));
  const std::string denied = FormatHttpResponse({401, "text/plain", "no"}, false);
  CHECK(denied.find("WWW-Authenticate: Basic realm=\"musterd\"\r\n") != std::string::npos);
}

// One request on a fresh connection, answered and closed: the whole reply.
std::string Fetch(asio::io_context& io, uint16_t port, const std::string& request,
                  const TlsContext* tls = nullptr) {
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), port});
  std::string reply;
  bool closed = false;
  std::unique_ptr<TlsStream> stream;
  std::array<char, 4096> chunk{};
  std::function<void()> read = [&] {
    auto on_read = [&](const boost::system::error_code& ec, size_t n) {
      reply.append(chunk.data(), n);
      if (ec) {
        closed = true;
      } else {
        read();
      }
    };
    if (stream) {
      stream->ReadSome(asio::buffer(chunk), on_read);
    } else {
      socket.async_read_some(asio::buffer(chunk), on_read);
    }
  };
  if (tls != nullptr) {
    stream = std::make_unique<TlsStream>(socket, *tls, "127.0.0.1");
    stream->Handshake([&](const boost::system::error_code& ec, size_t) {
      REQUIRE_FALSE(ec);
      stream->WriteAll(asio::buffer(request),
                       [&](const boost::system::error_code&, size_t) { read(); });
    });
  } else {
    asio::write(socket, asio::buffer(request));
    read();
  }
  // The server's acceptor keeps `io` busy for good: run until the reply ends.
  io.restart();
  while (!closed && io.run_one_for(std::chrono::seconds(10)) > 0) {
  }
  REQUIRE(closed);
  return reply;
}

TEST_CASE("HttpServer answers GET and HEAD, and refuses without the token", "[rdzv][http]") {
  asio::io_context io;
  int handled = 0;
  auto server = HttpServer::Start(io, {"127.0.0.1", 0, "--test-port", nullptr, "s3cret"},
                                  [&](const HttpRequest& request) {
                                    ++handled;
                                    return HttpResponse{200, "text/plain", "path " + request.path};
                                  });
  REQUIRE(server.ok());
  const uint16_t port = (*server)->port();

  std::string reply = Fetch(io, port, "GET /metrics HTTP/1.1\r\n\r\n");
  CHECK(reply.starts_with("HTTP/1.0 401"));
  CHECK(handled == 0);

  reply = Fetch(io, port, "GET /metrics?x=1 HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\r\n");
  CHECK(reply.starts_with("HTTP/1.0 200"));
  CHECK(reply.ends_with("path /metrics"));

  reply = Fetch(io, port, "HEAD / HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\r\n");
  CHECK(reply.starts_with("HTTP/1.0 200"));
  CHECK(reply.ends_with("\r\n\r\n"));

  reply = Fetch(io, port, "POST / HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\r\n");
  CHECK(reply.starts_with("HTTP/1.0 405"));
  reply = Fetch(io, port, "hello\r\n\r\n");
  CHECK(reply.starts_with("HTTP/1.0 400"));
  reply = Fetch(io, port, "GET /" + std::string(9000, 'a'));
  CHECK(reply.starts_with("HTTP/1.0 400"));
  CHECK(handled == 2);

  const auto taken = HttpServer::Start(io, {"127.0.0.1", port, "--test-port", nullptr, ""},
                                       [](const HttpRequest&) { return HttpResponse{}; });
  REQUIRE_FALSE(taken.ok());
  CHECK(taken.status().message().starts_with("--test-port: cannot listen on 127.0.0.1:"));
  const auto bad = HttpServer::Start(io, {"nowhere", 0, "--test-port", nullptr, ""},
                                     [](const HttpRequest&) { return HttpResponse{}; });
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "--test-port: bad address 'nowhere'");
}

TEST_CASE("over TLS HttpServer answers HTTPS, and tells a plain-text client", "[rdzv][http]") {
  static const TlsTestCerts certs;
  TlsServerFiles server_files;
  server_files.cert.path = certs.Cert("server");
  server_files.key.path = certs.Key("server");
  auto server_tls = TlsContext::ForServer(server_files, nullptr);
  REQUIRE(server_tls.ok());
  TlsClientFiles client_files;
  client_files.ca.path = certs.Cert("ca");
  auto client_tls = TlsContext::ForClient(client_files, nullptr);
  REQUIRE(client_tls.ok());

  asio::io_context io;
  auto server = HttpServer::Start(io, {"127.0.0.1", 0, "--test-port", *server_tls, ""},
                                  [](const HttpRequest&) {
                                    return HttpResponse{200, "text/plain", "over TLS"};
                                  });
  REQUIRE(server.ok());
  const uint16_t port = (*server)->port();
  std::string reply = Fetch(io, port, "GET / HTTP/1.1\r\n\r\n", client_tls->get());
  CHECK(reply.starts_with("HTTP/1.0 200"));
  CHECK(reply.ends_with("over TLS"));

  reply = Fetch(io, port, "GET / HTTP/1.1\r\n\r\n");
  CHECK(reply.starts_with("HTTP/1.0 400"));
  CHECK(reply.ends_with("this endpoint speaks HTTPS\n"));
}

TEST_CASE("out of descriptors the HTTP acceptor pauses instead of spinning, and recovers",
          "[rdzv][http]") {
  asio::io_context io;
  auto server =
      HttpServer::Start(io, {"127.0.0.1", 0, "--test-port", nullptr, ""}, [](const HttpRequest&) {
        return HttpResponse{200, "text/plain", "served"};
      });
  REQUIRE(server.ok());
  asio::ip::tcp::socket client(io);
  client.open(asio::ip::tcp::v4());  // its descriptor, before the table is full
  FullDescriptorTable full;
  // The kernel completes the connection into the backlog; accept fails.
  client.connect({asio::ip::make_address("127.0.0.1"), (*server)->port()});
  asio::write(client, asio::buffer(std::string("GET / HTTP/1.1\r\n\r\n")));

  const double cpu_before = ThreadCpuSeconds();
  io.run_for(std::chrono::milliseconds(500));
  const double cpu = ThreadCpuSeconds() - cpu_before;
  // A spinning acceptor burns the whole half second; a pausing one retries
  // about every AcceptRetry::kPause.
  CHECK(cpu < 0.05);
  CHECK((*server)->accept_pauses() >= 2);
  CHECK((*server)->accept_pauses() <= 8);

  full.Free();
  std::string reply;
  std::array<char, 1024> chunk{};
  bool closed = false;
  std::function<void()> read = [&] {
    client.async_read_some(asio::buffer(chunk), [&](const boost::system::error_code& ec, size_t n) {
      reply.append(chunk.data(), n);
      if (ec) {
        closed = true;
      } else {
        read();
      }
    });
  };
  read();
  io.restart();
  while (!closed && io.run_one_for(std::chrono::seconds(5)) > 0) {
  }
  CHECK(reply.starts_with("HTTP/1.0 200"));
  CHECK(reply.ends_with("served"));
}

}  // namespace
}  // namespace muster::rdzv
