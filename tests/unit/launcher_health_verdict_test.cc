// health_verdict: when the agent's health endpoint says it is alive, from
// when its monitor loop last ticked and its rendezvous last answered; and
// the limits a run's flags give. Time is a hand-made Time, never the clock.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>

#include "launcher/decide/health_verdict.h"

namespace muster {
namespace {

using std::chrono::milliseconds;

const Time kStart = Time() + std::chrono::hours(1);

Time At(int ms) { return kStart + milliseconds(ms); }

struct Row {
  const char* rule;
  bool elastic;
  int last_tick_ms;
  std::optional<int> last_contact_ms;  // nullopt: the rendezvous never answered
  int now_ms;
  bool healthy;
  const char* reason;
};

HealthLimits Limits(bool elastic) {
  HealthLimits limits;
  limits.tick_period = milliseconds(100);
  limits.tick_limit = milliseconds(5'000);
  if (elastic) limits.contact_limit = milliseconds(1'000);
  return limits;
}

TEST_CASE("the health verdict follows its rules in order", "[health_verdict]") {
  const Row rows[] = {
      {"a static run whose loop ticks is healthy", false, 0, std::nullopt, 4'000, true, "ok"},
      {"a static run is healthy at the tick limit itself", false, 0, std::nullopt, 5'000, true,
       "ok"},
      {"a static run whose loop stalled past the limit is unhealthy", false, 0, std::nullopt, 5'001,
       false, "monitor loop stalled: no tick for 5001 ms (limit 5000 ms)"},
      {"a static run judges no rendezvous however long since none answered", false, 9'000,
       std::nullopt, 9'050, true, "ok"},
      {"an elastic run heard recently is healthy", true, 2'000, 1'500, 2'050, true, "ok"},
      {"an elastic run is healthy at the contact limit itself", true, 2'000, 1'000, 2'000, true,
       "ok"},
      {"an elastic run whose rendezvous is silent past the fence timeout is unhealthy", true, 3'200,
       0, 3'200, false, "no answer from the rendezvous for 3200 ms (limit 1000 ms)"},
      {"before the first answer contact is not judged", true, 60'000, std::nullopt, 60'010, true,
       "waiting for the rendezvous' first answer"},
      {"a stalled loop outranks a silent rendezvous", true, 0, 0, 6'000, false,
       "monitor loop stalled: no tick for 6000 ms (limit 5000 ms)"},
      {"a stalled loop outranks the wait for a first answer", true, 0, std::nullopt, 6'000, false,
       "monitor loop stalled: no tick for 6000 ms (limit 5000 ms)"},
      {"a record newer than now is no silence", true, 2'000, 2'100, 1'900, true, "ok"},
  };
  for (const Row& row : rows) {
    INFO(row.rule);
    HealthRecord record;
    record.last_tick = At(row.last_tick_ms);
    if (row.last_contact_ms) record.last_contact = At(*row.last_contact_ms);
    const HealthVerdict verdict = JudgeHealth(Limits(row.elastic), record, At(row.now_ms));
    CHECK(verdict.healthy == row.healthy);
    CHECK(verdict.reason == row.reason);
  }
}

TEST_CASE("the loop ticks once per monitor interval and is stalled after five or 5 s",
          "[health_verdict]") {
  const HealthLimits torchrun_default = HealthLimitsFor(0.1, std::nullopt);
  CHECK(torchrun_default.tick_period == milliseconds(100));
  CHECK(torchrun_default.tick_limit == milliseconds(5'000));
  CHECK_FALSE(torchrun_default.contact_limit);

  const HealthLimits slow = HealthLimitsFor(2.0, std::nullopt);
  CHECK(slow.tick_period == milliseconds(2'000));
  CHECK(slow.tick_limit == milliseconds(10'000));
}

TEST_CASE("a tiny monitor interval does not make the tick the loop's work", "[health_verdict]") {
  const HealthLimits limits = HealthLimitsFor(0.001, std::nullopt);
  CHECK(limits.tick_period == kMinTickPeriod);
  CHECK(limits.tick_limit == kMinTickLimit);
}

TEST_CASE("contact is lost after the silence at which the agent fences", "[health_verdict]") {
  const HealthLimits limits = HealthLimitsFor(0.1, milliseconds(1'000));
  REQUIRE(limits.contact_limit);
  CHECK(*limits.contact_limit == milliseconds(1'000));
}

}  // namespace
}  // namespace muster
