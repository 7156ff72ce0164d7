#include "rendezvous/client/timing_agreement.h"

#include <array>

namespace muster::rdzv {
namespace {

Status Unusable(const std::string& what) {
  return Status::InvalidArgument("the rendezvous's timing is unusable: " + what);
}

std::string Named(std::string_view key, Duration value) {
  return std::string(key) + "=" + SecondsText(value) + "s";
}

}  // namespace

Result<AdoptedTiming> AdoptDaemonTiming(const Settings& own, const DaemonTiming& daemon) {
  AdoptedTiming adopted{own, ""};
  Settings& s = adopted.settings;
  struct Field {
    std::string_view key;
    uint64_t daemon_ms;
    Duration Settings::*member;
  };
  const std::array<Field, 4> fields = {{
      {"keep_alive_interval", daemon.keep_alive_interval_ms, &Settings::keep_alive_interval},
      {"heartbeat_timeout", daemon.heartbeat_timeout_ms, &Settings::heartbeat_timeout},
      {"fence_timeout", daemon.fence_timeout_ms, &Settings::fence_timeout},
      {"failover_timeout", daemon.failover_timeout_ms, &Settings::failover_timeout},
  }};
  for (const Field& field : fields) {
    // A week in ms, as settings.cc bounds every timeout; 0 is no timing at all.
    if (field.daemon_ms == 0 || field.daemon_ms > 7ull * 86'400'000) {
      return Unusable(std::string(field.key) + "=" + std::to_string(field.daemon_ms) +
                      " ms is not a timeout");
    }
    const Duration value(static_cast<Duration::rep>(field.daemon_ms));
    if (value != own.*field.member) {
      if (!adopted.differences.empty()) adopted.differences += " ";
      adopted.differences +=
          Named(field.key, value) + "(own=" + SecondsText(own.*field.member) + "s)";
    }
    s.*field.member = value;
  }
  // The rules settings.cc holds a daemon's own --rdzv-conf to, between these
  // four: without them the fence may come after the place is given away.
  const auto order = [](std::string_view a, Duration a_value, std::string_view relation,
                        std::string_view b, Duration b_value) {
    return Unusable(Named(a, a_value) + " must be " + std::string(relation) + " than " +
                    Named(b, b_value));
  };
  if (s.fence_timeout >= s.heartbeat_timeout) {
    return order("fence_timeout", s.fence_timeout, "shorter", "heartbeat_timeout",
                 s.heartbeat_timeout);
  }
  if (s.keep_alive_interval >= s.heartbeat_timeout) {
    return order("keep_alive_interval", s.keep_alive_interval, "shorter", "heartbeat_timeout",
                 s.heartbeat_timeout);
  }
  if (s.failover_timeout <= s.fence_timeout) {
    return order("failover_timeout", s.failover_timeout, "longer", "fence_timeout",
                 s.fence_timeout);
  }
  return adopted;
}

}  // namespace muster::rdzv
