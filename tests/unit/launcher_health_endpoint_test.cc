// HealthEndpoint: a probe of /healthz gets 200 while the loop ticks and the
// rendezvous answers, 503 with the reason once the rendezvous is silent past
// the limit; /metrics gives the node's counters; anything else is 404.
// A real listener on loopback; the client runs on a thread of its own while
// the endpoint answers on the test's io_context.
#include "launcher/agent/health_endpoint.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <future>
#include <string>
#include <thread>

namespace muster {
namespace {
namespace asio = boost::asio;
using namespace std::chrono_literals;

// GET `path` from 127.0.0.1:`port`; the whole answer, head and body.
std::string Get(uint16_t port, const std::string& path) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), port});
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  asio::write(socket, asio::buffer(request));
  std::string answer;
  boost::system::error_code ec;
  asio::read(socket, asio::dynamic_buffer(answer), ec);  // until the server closes
  return answer;
}

// The status code of an answer's first line ("HTTP/1.0 200 OK").
int StatusOf(const std::string& answer) {
  const size_t space = answer.find(' ');
  return space == std::string::npos ? 0 : std::stoi(answer.substr(space + 1, 3));
}

// Runs `io` until `probe` (on another thread) returns, and gives its answer.
std::string Probe(asio::io_context& io, uint16_t port, const std::string& path) {
  auto answer = std::async(std::launch::async, [&] { return Get(port, path); });
  while (answer.wait_for(0ms) != std::future_status::ready) io.run_for(10ms);
  return answer.get();
}

LaunchOptions OnLoopback() {
  LaunchOptions options;
  options.local_addr = "127.0.0.1";
  options.health_port = 0;
  options.health_port_origin = "--health-port";
  return options;
}

TEST_CASE("healthz follows the rendezvous's silence, metrics give the counters",
          "[health-endpoint]") {
  asio::io_context io;
  HealthEndpoint::NodeState state;
  state.attempt = 2;
  state.store_refused = 5;
  state.generation = 3;
  state.last_contact = Clock::now();
  auto endpoint = HealthEndpoint::Start(io, OnLoopback(), 60s, [&] { return state; });
  REQUIRE(endpoint.ok());
  const uint16_t port = (*endpoint)->port();

  std::string answer = Probe(io, port, "/healthz");
  CHECK(StatusOf(answer) == 200);
  CHECK_THAT(answer, Catch::EndsWith("\r\n\r\nok\n"));

  answer = Probe(io, port, "/metrics");
  CHECK(StatusOf(answer) == 200);
  CHECK_THAT(answer, Catch::Contains("text/plain; version=0.0.4"));
  CHECK_THAT(answer, Catch::Contains(" 5\n"));  // the refused connections

  // The rendezvous has been silent past the client's own fence limit.
  state.last_contact = Clock::now() - 10s;
  state.fence_after = 2s;
  answer = Probe(io, port, "/healthz");
  CHECK(StatusOf(answer) == 503);

  answer = Probe(io, port, "/elsewhere");
  CHECK(StatusOf(answer) == 404);
  (*endpoint)->Stop();
}

TEST_CASE("a health port in use is an error naming the setting", "[health-endpoint]") {
  asio::io_context io;
  asio::ip::tcp::acceptor taken(io, {asio::ip::make_address("127.0.0.1"), 0});
  LaunchOptions options = OnLoopback();
  options.health_port = taken.local_endpoint().port();
  auto endpoint =
      HealthEndpoint::Start(io, options, std::nullopt, [] { return HealthEndpoint::NodeState{}; });
  REQUIRE_FALSE(endpoint.ok());
  CHECK_THAT(endpoint.status().message(), Catch::Contains("--health-port"));
}

}  // namespace
}  // namespace muster
