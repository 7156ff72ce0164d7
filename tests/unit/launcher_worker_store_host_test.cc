// WorkerStoreHost: where the node's worker store listens in each mode, and
// errors that name the store. Real listeners on loopback.
#include "launcher/agent/worker_store_host.h"

#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>

namespace muster {
namespace {
namespace asio = boost::asio;

// A port this test holds listening, so that nobody else can take it.
class TakenPort {
 public:
  explicit TakenPort(asio::io_context& io)
      : acceptor_(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {}
  int port() const { return acceptor_.local_endpoint().port(); }

 private:
  asio::ip::tcp::acceptor acceptor_;
};

TEST_CASE("static: node 0's store takes any port when given 0", "[worker-store-host]") {
  asio::io_context io;
  LaunchOptions options;
  auto host = WorkerStoreHost::StartStatic(io, options, "127.0.0.1", 1, 0);
  REQUIRE(host.ok());
  CHECK((*host)->port() > 0);
  CHECK((*host)->refused_connections() == 0);
  (*host)->RenewForAttempt(1);  // a restart opens it afresh
  (*host)->Stop();
}

TEST_CASE("a port in use is an error that names the worker store", "[worker-store-host]") {
  asio::io_context io;
  TakenPort taken(io);
  LaunchOptions options;
  auto host = WorkerStoreHost::StartStatic(io, options, "127.0.0.1", 1, taken.port());
  REQUIRE_FALSE(host.ok());
  CHECK_THAT(host.status().message(), Catch::StartsWith("worker store: "));

  options.master_port = taken.port();
  auto elastic = WorkerStoreHost::StartElastic(io, options, /*loopback_only=*/true);
  REQUIRE_FALSE(elastic.ok());
  CHECK_THAT(elastic.status().message(), Catch::StartsWith("worker store: "));
}

TEST_CASE("elastic: --standalone ignores --master-port, as torchrun does", "[worker-store-host]") {
  asio::io_context io;
  TakenPort taken(io);
  LaunchOptions options;
  options.standalone = true;
  options.master_port = taken.port();
  auto host = WorkerStoreHost::StartElastic(io, options, /*loopback_only=*/true);
  REQUIRE(host.ok());
  CHECK((*host)->port() != taken.port());
  // Sealed until a generation names this node its master; a member keeps it
  // sealed, the master opens it.
  rdzv::Assignment member;
  member.generation = 1;
  member.group_rank = 1;
  (*host)->EnterGeneration(member);
  rdzv::Assignment master;
  master.generation = 2;
  master.group_rank = 0;
  (*host)->SetMembers(2, {"127.0.0.1"});
  (*host)->EnterGeneration(master);
  (*host)->Stop();
}

}  // namespace
}  // namespace muster
