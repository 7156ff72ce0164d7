// ServeRendezvousIfHost: an agent asked to serve the rendezvous serves it (on
// a port of its own when given 0), one that may serve it joins when the port
// is taken, and one asked to serve and unable to is an error. Real listeners
// on loopback.
#include "launcher/agent/embedded_rendezvous.h"

#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>

namespace muster {
namespace {
namespace asio = boost::asio;

ElasticConfig OnLoopback(uint16_t port) {
  ElasticConfig config;
  config.host = "127.0.0.1";
  config.port = port;
  config.loopback_only = true;
  return config;
}

TEST_CASE("is_host serves the rendezvous, and a port of 0 becomes the one it took",
          "[embedded-rendezvous]") {
  asio::io_context io;
  ElasticConfig config = OnLoopback(0);
  config.is_host = true;
  auto served = ServeRendezvousIfHost(io, config);
  REQUIRE(served.ok());
  REQUIRE(*served != nullptr);
  CHECK(config.port == (*served)->port());
  CHECK(config.port != 0);
  CHECK(config.is_host);
}

TEST_CASE("the c10d rule joins whoever serves the port when it is taken, and serves it when free",
          "[embedded-rendezvous]") {
  asio::io_context io;
  asio::ip::tcp::acceptor taken(io, {asio::ip::make_address("127.0.0.1"), 0});
  ElasticConfig busy = OnLoopback(taken.local_endpoint().port());
  busy.host_if_local = true;
  auto joined = ServeRendezvousIfHost(io, busy);
  REQUIRE(joined.ok());
  CHECK(*joined == nullptr);
  CHECK_FALSE(busy.is_host);

  const uint16_t free_port = taken.local_endpoint().port();
  taken.close();
  ElasticConfig free = OnLoopback(free_port);
  free.host_if_local = true;
  auto served = ServeRendezvousIfHost(io, free);
  REQUIRE(served.ok());
  CHECK(*served != nullptr);
  CHECK(free.is_host);
}

TEST_CASE("asked to serve on a port in use is an error", "[embedded-rendezvous]") {
  asio::io_context io;
  asio::ip::tcp::acceptor taken(io, {asio::ip::make_address("127.0.0.1"), 0});
  ElasticConfig config = OnLoopback(taken.local_endpoint().port());
  config.is_host = true;
  auto served = ServeRendezvousIfHost(io, config);
  REQUIRE_FALSE(served.ok());
  CHECK_THAT(served.status().message(), Catch::Contains(std::to_string(config.port)));
}

}  // namespace
}  // namespace muster
