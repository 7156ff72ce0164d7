#include "launcher/decide/health_verdict.h"

#include <algorithm>
#include <cmath>

namespace muster {
namespace {

using std::chrono::milliseconds;

std::string Silence(const char* what, milliseconds silent, milliseconds limit) {
  return std::string(what) + " for " + std::to_string(silent.count()) + " ms (limit " +
         std::to_string(limit.count()) + " ms)";
}

milliseconds Since(Time then, Time now) {
  // A record from after `now` (read on another clock tick) is no silence.
  return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(now - then));
}

}  // namespace

HealthLimits HealthLimitsFor(double monitor_interval_s, std::optional<milliseconds> contact_limit) {
  HealthLimits limits;
  const auto interval = milliseconds(static_cast<int64_t>(std::llround(monitor_interval_s * 1000)));
  // A tiny interval would make the tick the loop's main work.
  limits.tick_period = std::max(interval, kMinTickPeriod);
  limits.tick_limit = std::max(limits.tick_period * kStalledTicks, kMinTickLimit);
  limits.contact_limit = contact_limit;
  return limits;
}

HealthVerdict JudgeHealth(const HealthLimits& limits, const HealthRecord& record, Time now) {
  const milliseconds since_tick = Since(record.last_tick, now);
  if (since_tick > limits.tick_limit) {
    return {false, Silence("monitor loop stalled: no tick", since_tick, limits.tick_limit)};
  }
  if (!limits.contact_limit) return {true, "ok"};
  if (!record.last_contact) return {true, "waiting for the rendezvous' first answer"};
  const milliseconds silent = Since(*record.last_contact, now);
  if (silent > *limits.contact_limit) {
    return {false, Silence("no answer from the rendezvous", silent, *limits.contact_limit)};
  }
  return {true, "ok"};
}

}  // namespace muster
