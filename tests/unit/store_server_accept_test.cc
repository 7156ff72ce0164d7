// The worker store's listener out of descriptors (docs/security.md): its
// accept fails while none is free, and it waits AcceptRetry::kPause between
// tries instead of spinning on the io_context every connection shares; the
// waiting connection is served once a descriptor is free.
#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>

#include "common/clock.h"
#include "store/store_server.h"
#include "tests/unit/full_descriptor_table.h"

namespace muster::store {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using testing::FullDescriptorTable;
using testing::ThreadCpuSeconds;

TEST_CASE("out of descriptors the store acceptor pauses instead of spinning, and recovers",
          "[store][server]") {
  asio::io_context io;
  auto server = StoreServer::Start(io, "127.0.0.1", 0);
  REQUIRE(server.ok());
  asio::ip::tcp::socket client(io);
  client.open(asio::ip::tcp::v4());  // its descriptor, before the table is full
  FullDescriptorTable full;
  // The kernel completes the connection into the backlog; accept fails.
  client.connect({asio::ip::address_v4::loopback(), (*server)->port()});

  const double cpu_before = ThreadCpuSeconds();
  io.run_for(500ms);
  const double cpu = ThreadCpuSeconds() - cpu_before;
  // A spinning acceptor burns the whole half second; a pausing one retries
  // about every AcceptRetry::kPause.
  CHECK(cpu < 0.05);
  CHECK((*server)->accept_pauses() >= 2);
  CHECK((*server)->accept_pauses() <= 8);
  CHECK((*server)->num_connections() == 0);

  full.Free();
  const Time give_up = Clock::now() + 5s;
  while ((*server)->num_connections() == 0 && Clock::now() < give_up) {
    io.restart();
    io.run_for(5ms);
  }
  CHECK((*server)->num_connections() == 1);
  CHECK((*server)->refused_connections() == 0);
}

}  // namespace
}  // namespace muster::store
