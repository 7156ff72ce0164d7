#include <catch2/catch.hpp>

#include "worker_runtime/store/tcp_connection.h"

namespace muster::runtime {
namespace {

using std::chrono::milliseconds;

TEST_CASE("connect retries back off from 10 ms, doubling up to 500 ms") {
  CHECK(NextConnectBackoff(0) == milliseconds(10));
  CHECK(NextConnectBackoff(1) == milliseconds(20));
  CHECK(NextConnectBackoff(4) == milliseconds(160));
  CHECK(NextConnectBackoff(5) == milliseconds(320));
  CHECK(NextConnectBackoff(6) == milliseconds(500));
  CHECK(NextConnectBackoff(1000) == milliseconds(500));
  CHECK(NextConnectBackoff(-1) == milliseconds(10));
}

}  // namespace
}  // namespace muster::runtime
