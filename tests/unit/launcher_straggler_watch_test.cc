// StragglerWatch (launcher/agent/straggler_watch.h): each judgement hands the
// node's ranks' averages, by local rank, to the daemon's side.
#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <vector>

#include "launcher/agent/straggler_watch.h"

namespace muster {
namespace {

TEST_CASE("each judgement publishes the node's ranks' compute times by local rank",
          "[launcher][straggler]") {
  boost::asio::io_context io;
  StragglerWatch watch(io, "host");
  watch.Reset(4, 3);  // global ranks 4, 5 and 6
  std::vector<std::vector<uint64_t>> published;
  watch.SetPublish([&](std::vector<uint64_t> compute_us) { published.push_back(compute_us); });
  watch.OnCompute(4, 20'000);
  watch.OnCompute(5, 41'000);
  watch.OnCompute(9, 5'000);  // not this node's: not published
  io.run_for(std::chrono::milliseconds(1'300));
  REQUIRE(published.size() == 1);
  CHECK(published[0] == std::vector<uint64_t>{20'000, 41'000, 0});  // rank 6: unknown

  // A new set of ranks (here the same numbers) starts from nothing: rank 4's
  // new average is its one report, not a blend with 20 ms, and rank 5's
  // 41 ms is gone.
  watch.Reset(4, 3);
  watch.OnCompute(4, 30'000);
  io.restart();
  io.run_for(std::chrono::milliseconds(1'300));
  REQUIRE(published.size() == 2);
  CHECK(published[1] == std::vector<uint64_t>{30'000, 0, 0});
}

}  // namespace
}  // namespace muster
