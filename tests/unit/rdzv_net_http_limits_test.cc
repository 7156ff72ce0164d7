// HttpServer's bounds where Beast's parser reads the head: a head of 8 KiB
// exactly is read and one byte more is refused; a body is never read, so a
// POST that carries one is refused as read-only like any other; heads that
// are not HTTP/1 with a path are refused, whether split across many writes
// or not; past 128 connections a new one is closed at accept, and a
// connection that sends nothing is closed after 5 s. And the token rule's
// own base64 reading, which the fuzz target found reading past its end.
#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "rendezvous/net/http_message.h"
#include "rendezvous/net/http_server.h"

namespace muster::rdzv {
namespace {

namespace asio = boost::asio;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

// A server on loopback that answers "path P" to every request it admits,
// and counts them in handled_.
class PathEchoServer {
 protected:
  PathEchoServer() {
    auto server = HttpServer::Start(
        io_, {"127.0.0.1", 0, "--test-port", nullptr, ""}, [this](const HttpRequest& request) {
          ++handled_;
          return HttpResponse{200, "text/plain", "path " + request.path};
        });
    REQUIRE(server.ok());
    server_ = std::move(*server);
  }

  asio::ip::tcp::endpoint Endpoint() const {
    return {asio::ip::make_address("127.0.0.1"), server_->port()};
  }

  // Runs the loop until the server closes `client`: what it sent before.
  std::string ReadToEnd(asio::ip::tcp::socket& client) {
    std::string reply;
    bool ended = false;
    asio::async_read(client, asio::dynamic_buffer(reply),
                     [&ended](const boost::system::error_code&, size_t) { ended = true; });
    io_.restart();
    while (!ended && io_.run_one_for(std::chrono::seconds(10)) > 0) {
    }
    REQUIRE(ended);
    return reply;
  }

  // Sends `pieces` one write each, the server's loop running in between,
  // and reads the answer to its end.
  std::string Send(std::initializer_list<std::string> pieces) {
    asio::ip::tcp::socket client(io_);
    client.connect(Endpoint());
    for (const std::string& piece : pieces) {
      asio::write(client, asio::buffer(piece));
      io_.restart();
      io_.run_for(std::chrono::milliseconds(20));
    }
    return ReadToEnd(client);
  }

  asio::io_context io_;
  int handled_ = 0;
  std::unique_ptr<HttpServer> server_;
};

// A GET whose head is `size` bytes, blank line included.
std::string HeadOfSize(size_t size) {
  const std::string_view frame = "GET / HTTP/1.1\r\nX-Pad: \r\n\r\n";
  return "GET / HTTP/1.1\r\nX-Pad: " + std::string(size - frame.size(), 'p') + "\r\n\r\n";
}

TEST_CASE_METHOD(PathEchoServer, "a head of 8 KiB is read and one byte more is refused",
                 "[rdzv][http]") {
  REQUIRE(HeadOfSize(kMaxHttpHeadBytes).size() == 8192);

  CHECK_THAT(Send({HeadOfSize(kMaxHttpHeadBytes)}), StartsWith("HTTP/1.0 200"));
  CHECK_THAT(Send({HeadOfSize(kMaxHttpHeadBytes + 1)}),
             StartsWith("HTTP/1.0 400") && EndsWith("request head too long\n"));
  CHECK(handled_ == 1);
}

TEST_CASE_METHOD(PathEchoServer,
                 "a body is never read: a POST with one is refused as read-only, a GET is answered",
                 "[rdzv][http]") {
  CHECK_THAT(Send({"POST /metrics HTTP/1.1\r\nContent-Length: 5000000\r\n\r\n12345"}),
             StartsWith("HTTP/1.0 405"));
  CHECK_THAT(Send({"GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"}),
             StartsWith("HTTP/1.0 200") && EndsWith("path /metrics"));
  CHECK(handled_ == 1);
}

TEST_CASE_METHOD(PathEchoServer,
                 "a head that is not HTTP/1 with a path is refused, whole or in pieces",
                 "[rdzv][http]") {
  for (const char* head : {"GET / HTTP/2.0\r\n\r\n", "GET status HTTP/1.1\r\n\r\n",
                           "GET / HTTP/1.1\r\nno colon here\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n"}) {
    INFO(head);
    CHECK_THAT(Send({head}), StartsWith("HTTP/1.0 400") && EndsWith("not an HTTP/1 request\n"));
  }
  CHECK_THAT(Send({"GE", "T /sta", "tus.json?run=a HT", "TP/1.1\r", "\n\r\n"}),
             StartsWith("HTTP/1.0 200") && EndsWith("path /status.json"));
  CHECK(handled_ == 1);
}

TEST_CASE_METHOD(PathEchoServer,
                 "past 128 connections a new one is closed at once, and a silent one after 5 s",
                 "[rdzv][http]") {
  const auto start = std::chrono::steady_clock::now();
  std::vector<asio::ip::tcp::socket> silent;
  for (int i = 0; i < 128; ++i) {
    silent.emplace_back(io_).connect(Endpoint());
    io_.run_for(std::chrono::milliseconds(1));  // the server accepts it (its backlog is 64)
  }
  io_.run_for(std::chrono::milliseconds(100));

  asio::ip::tcp::socket extra(io_);
  extra.connect(Endpoint());
  CHECK(ReadToEnd(extra).empty());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(4));  // not held 5 s

  CHECK(ReadToEnd(silent.front()).empty());
  const auto held = std::chrono::steady_clock::now() - start;
  CHECK(held >= std::chrono::milliseconds(4900));
  CHECK(held < std::chrono::seconds(8));
  CHECK_THAT(Send({"GET /after HTTP/1.1\r\n\r\n"}), EndsWith("path /after"));
  CHECK(handled_ == 1);
}

TEST_CASE("a head is read with the server's limits outside the server too", "[rdzv][http]") {
  CHECK(ParseHttpRequestHead(HeadOfSize(kMaxHttpHeadBytes)));
  CHECK_FALSE(ParseHttpRequestHead(HeadOfSize(kMaxHttpHeadBytes + 1)));
  CHECK_FALSE(ParseHttpRequestHead("GET / HTTP/2.0\r\n"));
  const auto request = ParseHttpRequestHead("GET /x HTTP/1.0");
  REQUIRE(request);
  CHECK(request->path == "/x");
}

TEST_CASE("a Basic credential of padding alone is refused, not read past its end", "[rdzv][http]") {
  CHECK_FALSE(HttpAuthorized("Basic ====", "s3cret"));
  CHECK_FALSE(HttpAuthorized("Basic A===", "s3cret"));
  CHECK_FALSE(HttpAuthorized("Basic OnMzY3JldA===", "s3cret"));
  CHECK(HttpAuthorized("Basic OnMzY3JldA==", "s3cret"));  // :s3cret
}

}  // namespace
}  // namespace muster::rdzv
