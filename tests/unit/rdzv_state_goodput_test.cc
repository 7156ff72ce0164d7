// The run's goodput as one node sees it (rendezvous/state/goodput.h).
#include <catch2/catch.hpp>

#include "rendezvous/state/goodput.h"

namespace muster::rdzv {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

const Time kRunStart{};

TEST_CASE("a fault-free run: the time to the first step and the tail count against it") {
  GoodputMeter meter(kRunStart);
  meter.OnAttemptStarted(kRunStart + 1s);
  meter.OnNodeStep(std::nullopt, kRunStart + 4s);  // not every rank stepped yet
  for (int step = 1; step <= 90; ++step) meter.OnNodeStep(step, kRunStart + 5s + step * 100ms);
  meter.OnAttemptEnded(kRunStart + 15s, true);  // the workers succeeded
  const auto goodput = meter.Finish(kRunStart + 16s);
  REQUIRE(goodput);
  CHECK(goodput->wall == 16s);
  CHECK(goodput->to_first_step == 5100ms);
  CHECK(goodput->productive == 8900ms);
  CHECK(goodput->downtime == 0s);
  CHECK(goodput->tail == 2s);  // the last step (14 s) to the run's end
  CHECK(goodput->attempts == 1);
  CHECK(goodput->ratio() == Approx(8.9 / 16));
}

TEST_CASE("a fault: downtime until every rank steps again, and redone steps") {
  GoodputMeter meter(kRunStart);
  meter.OnAttemptStarted(kRunStart);
  for (int step = 1; step <= 30; ++step) meter.OnNodeStep(step, kRunStart + 1s + step * 100ms);
  meter.OnAttemptEnded(kRunStart + 10s, false);  // hung at step 30 (4 s), found at 10 s
  meter.OnAttemptStarted(kRunStart + 11s);
  // Restarted from the checkpoint of step 20: steps 21..30 are redone.
  for (int step = 21; step <= 50; ++step)
    meter.OnNodeStep(step, kRunStart + 13s + (step - 20) * 100ms);
  const auto goodput = meter.Finish(kRunStart + 16s);
  REQUIRE(goodput);
  CHECK(goodput->attempts == 2);
  CHECK(goodput->to_first_step == 1100ms);
  CHECK(goodput->productive == 2900ms + 1900ms);  // steps 1..30, then 31..50 (14.1 s..16 s)
  CHECK(goodput->downtime == 6s + 3100ms);        // 4 s..10 s, then 10 s..13.1 s
  CHECK(goodput->redone == 1000ms);               // 13.1 s..14.1 s: steps 21..30
  CHECK(goodput->ratio() < 0.35);
}

TEST_CASE("each attempt's first step says how long training stood still") {
  GoodputMeter meter(kRunStart);
  meter.OnAttemptStarted(kRunStart + 1s);
  CHECK_FALSE(meter.OnNodeStep(std::nullopt, kRunStart + 2s));  // not every rank yet
  CHECK(meter.OnNodeStep(1, kRunStart + 3s) == 3s);             // from the run's start
  CHECK_FALSE(meter.OnNodeStep(2, kRunStart + 4s));             // not the first any more
  // A new generation, started without the attempt before said to end (the
  // daemon's case): the standstill runs from the last step (4 s).
  meter.OnAttemptStarted(kRunStart + 6s);
  CHECK(meter.OnNodeStep(1, kRunStart + 9s) == 5s);
  CHECK(meter.OnNodeStep(3, kRunStart + 10s) == std::nullopt);
  // A fault ends the attempt, which fails to step, and the next one steps.
  meter.OnAttemptEnded(kRunStart + 12s, false);
  meter.OnAttemptStarted(kRunStart + 13s);
  meter.OnAttemptEnded(kRunStart + 15s, false);
  meter.OnAttemptStarted(kRunStart + 16s);
  CHECK(meter.OnNodeStep(4, kRunStart + 20s) == 10s);  // the last step was at 10 s
}

TEST_CASE("a live view changes nothing, and agrees with the end") {
  GoodputMeter meter(kRunStart);
  meter.OnAttemptStarted(kRunStart);
  for (int step = 1; step <= 10; ++step) meter.OnNodeStep(step, kRunStart + step * 1s);
  const auto live = meter.Peek(kRunStart + 10s);
  REQUIRE(live);
  CHECK(live->productive == 9s);
  CHECK(live->to_first_step == 1s);
  CHECK(live->ratio() == Approx(0.9));
  for (int step = 11; step <= 20; ++step) meter.OnNodeStep(step, kRunStart + step * 1s);
  const auto end = meter.Finish(kRunStart + 20s);
  REQUIRE(end);
  CHECK(end->productive == 19s);
  CHECK(end->wall == 20s);
}

TEST_CASE("a run that reports no steps has no goodput") {
  GoodputMeter meter(kRunStart);
  meter.OnAttemptStarted(kRunStart);
  meter.OnAttemptEnded(kRunStart + 5s, false);
  CHECK_FALSE(meter.Finish(kRunStart + 6s));
}

}  // namespace
}  // namespace muster::rdzv
