// The slow rank in lock-step training, by compute time
// (rendezvous/state/compute_stragglers.h).
#include <catch2/catch.hpp>

#include "rendezvous/state/compute_stragglers.h"

namespace muster::rdzv {
namespace {

using namespace std::chrono_literals;

const Time kBegin{};

// Four ranks reporting every 100 ms for `seconds`, rank `slow` taking
// `factor` times longer; returns every change, in order.
std::vector<ComputeStragglerChange> Run(ComputeStragglers& stragglers, int seconds, int slow,
                                        double factor, Time& now) {
  std::vector<ComputeStragglerChange> changes;
  for (int tick = 0; tick < seconds * 10; ++tick) {
    now += 100ms;
    for (int rank = 0; rank < 4; ++rank) {
      stragglers.OnCompute(rank, rank == slow ? 20.0 * factor : 20.0 + rank * 0.5, now);
    }
    if (tick % 10 == 9) {
      for (const auto& change : stragglers.Evaluate(now)) changes.push_back(change);
    }
  }
  return changes;
}

TEST_CASE("a rank twice as slow as the others is flagged after the window, and only it") {
  ComputeStragglers stragglers;  // 1.5x the median for 10 s
  Time now = kBegin;
  auto changes = Run(stragglers, 9, 2, 2.0, now);
  CHECK(changes.empty());  // within the window: not yet
  changes = Run(stragglers, 3, 2, 2.0, now);
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].flagged);
  CHECK(changes[0].rank == 2);
  CHECK(changes[0].compute_ms == Approx(40.0));
  CHECK(changes[0].median_ms == Approx(20.5).epsilon(0.05));
  CHECK(stragglers.flagged() == std::vector<int>{2});
  // It recovers: cleared.
  changes = Run(stragglers, 3, -1, 1.0, now);
  REQUIRE(changes.size() == 1);
  CHECK_FALSE(changes[0].flagged);
  CHECK(stragglers.flagged().empty());
}

TEST_CASE("ranks that step alike flag nobody, and neither do two ranks") {
  ComputeStragglers stragglers;
  Time now = kBegin;
  CHECK(Run(stragglers, 60, -1, 1.0, now).empty());
  ComputeStragglers two;
  now = kBegin;
  for (int i = 0; i < 200; ++i) {
    now += 100ms;
    two.OnCompute(0, 20, now);
    two.OnCompute(1, 80, now);
    CHECK(two.Evaluate(now).empty());
  }
}

TEST_CASE("a rank whose reports stop is no longer judged, and Clear forgets every rank") {
  ComputeStragglers stragglers;
  Time now = kBegin;
  Run(stragglers, 12, 3, 3.0, now);
  REQUIRE(stragglers.flagged() == std::vector<int>{3});
  now += 6s;  // past `stale` for every rank
  const auto changes = stragglers.Evaluate(now);
  REQUIRE(changes.size() == 1);
  CHECK_FALSE(changes[0].flagged);
  stragglers.Clear();
  CHECK(stragglers.flagged().empty());
  stragglers.OnCompute(0, 0, now);  // nothing measured: ignored
  CHECK(stragglers.Evaluate(now).empty());
}

}  // namespace
}  // namespace muster::rdzv
