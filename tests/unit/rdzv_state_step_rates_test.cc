// StepRate and MedianRate (rendezvous/state/step_rates.h): a node's steps per
// second from the steps its heartbeats carry, on a hand-driven clock.
#include <catch2/catch.hpp>
#include <optional>
#include <vector>

#include "rendezvous/state/step_rates.h"

using namespace muster::rdzv;
using muster::Time;
using std::chrono::milliseconds;

namespace {

// A node heart-beating every 0.5 s (the default keep_alive_interval) whose
// workers make `per_second` steps a second, from `start`.
struct SteppingNode {
  StepRate rate;
  Time now{};
  double step = 0;
  uint64_t generation = 1;

  void Run(milliseconds how_long, double per_second) {
    const Time end = now + how_long;
    while (now < end) {
      now += milliseconds(500);
      step += per_second / 2;
      rate.Record(generation, static_cast<uint64_t>(step), now);
    }
  }
};

}  // namespace

TEST_CASE("a node's rate is unknown until it reported steps for a second", "[rdzv][steps]") {
  StepRate rate;
  CHECK_FALSE(rate.PerSecond().has_value());
  rate.Record(1, 0, Time{} + milliseconds(500));  // a heartbeat without a step
  CHECK_FALSE(rate.PerSecond().has_value());
  rate.Record(1, 10, Time{} + milliseconds(1000));
  CHECK_FALSE(rate.PerSecond().has_value());
  rate.Record(1, 15, Time{} + milliseconds(1500));
  CHECK_FALSE(rate.PerSecond().has_value());  // half a second of samples
  rate.Record(1, 20, Time{} + milliseconds(2000));
  REQUIRE(rate.PerSecond().has_value());
  CHECK(*rate.PerSecond() == Approx(10.0));
}

TEST_CASE("a steady node's rate is its steps per second", "[rdzv][steps]") {
  struct Row {
    double per_second;
  };
  for (Row row : {Row{1}, Row{2}, Row{10}, Row{250}}) {
    INFO("steps per second " << row.per_second);
    SteppingNode node;
    node.Run(milliseconds(8'000), row.per_second);
    REQUIRE(node.rate.PerSecond().has_value());
    CHECK(*node.rate.PerSecond() == Approx(row.per_second).epsilon(0.15));
  }
}

TEST_CASE("the rate follows a slowdown within the window", "[rdzv][steps]") {
  SteppingNode node;
  node.Run(milliseconds(10'000), 10);
  CHECK(*node.rate.PerSecond() == Approx(10).epsilon(0.05));
  node.Run(StepRate::kWindow + milliseconds(1'000), 2);
  CHECK(*node.rate.PerSecond() == Approx(2).epsilon(0.15));
}

TEST_CASE("a node whose workers stop stepping falls to 0 within the window", "[rdzv][steps]") {
  SteppingNode node;
  node.Run(milliseconds(6'000), 10);
  node.Run(StepRate::kWindow + milliseconds(1'000), 0);  // same step, heartbeats go on
  REQUIRE(node.rate.PerSecond().has_value());
  CHECK(*node.rate.PerSecond() == 0.0);
}

TEST_CASE("a step count that starts again is a fresh history, not a negative rate",
          "[rdzv][steps]") {
  SECTION("the count went back in the same generation (workers restarted)") {
    SteppingNode node;
    node.Run(milliseconds(6'000), 10);
    node.step = 0;
    node.Run(milliseconds(500), 4);
    CHECK_FALSE(node.rate.PerSecond().has_value());
    node.Run(milliseconds(3'000), 4);
    REQUIRE(node.rate.PerSecond().has_value());
    CHECK(*node.rate.PerSecond() == Approx(4).epsilon(0.15));
  }
  SECTION("a new generation") {
    SteppingNode node;
    node.Run(milliseconds(6'000), 10);
    node.generation = 2;
    node.Run(milliseconds(500), 10);  // the count goes on, but in another generation
    CHECK_FALSE(node.rate.PerSecond().has_value());
    node.Run(milliseconds(3'000), 10);
    CHECK(*node.rate.PerSecond() == Approx(10).epsilon(0.15));
  }
  SECTION("a heartbeat of a new generation without a step yet") {
    SteppingNode node;
    node.Run(milliseconds(6'000), 10);
    node.rate.Record(2, 0, node.now + milliseconds(500));
    CHECK_FALSE(node.rate.PerSecond().has_value());
  }
}

TEST_CASE("the median is the middle rate, or the mean of the two middle ones", "[rdzv][steps]") {
  struct Row {
    std::vector<double> rates;
    std::optional<double> median;
  };
  for (Row row : {Row{{}, std::nullopt}, Row{{3}, 3.0}, Row{{1, 2}, 1.5}, Row{{5, 1, 3}, 3.0},
                  Row{{4, 1, 3, 2}, 2.5}, Row{{9, 9, 0.5, 9, 9}, 9.0}}) {
    std::vector<double> rates = row.rates;
    CHECK(MedianRate(rates) == row.median);
  }
}
