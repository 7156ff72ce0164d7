#include "rendezvous/state/settings.h"

#include <cstdio>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "common/quote.h"
#include "common/trim.h"

namespace muster::rdzv {
namespace {

Status BadValue(const std::string& key, const std::string& value, const std::string& want) {
  return Status::InvalidArgument("--rdzv-conf: " + key + "='" + value + "' must be " + want);
}

// Seconds as a decimal number, > 0 (at least 1 ms), at most a week.
Result<Duration> ParseSeconds(const std::string& key, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  const double seconds = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || errno != 0 || !std::isfinite(seconds) || seconds <= 0 ||
      seconds > 86400.0 * 7 || std::llround(seconds * 1000.0) < 1) {  // timeouts are in ms
    return BadValue(key, value, "a positive number of seconds");
  }
  return Duration(static_cast<int64_t>(std::llround(seconds * 1000.0)));
}

// "--rdzv-conf: A=Xs must be longer than B=Ys": two settings in the wrong
// order, each shown with its value.
// etcd's shortest lease at its defaults, the leader's (rendezvous/replica/),
// plus the half second etcd 3.4 may take to notice it expired.
constexpr Duration kLeaseAllowance{2'500};

Status OrderRefusal(std::string_view a, Duration a_value, std::string_view relation,
                    std::string_view b, Duration b_value) {
  std::string message = "--rdzv-conf: ";
  message.append(a).append("=").append(std::to_string(a_value.count() / 1000.0));
  message.append("s must be ").append(relation).append(" than ");
  message.append(b).append("=").append(std::to_string(b_value.count() / 1000.0)).append("s");
  return Status::InvalidArgument(std::move(message));
}

}  // namespace

bool Settings::IsKey(std::string_view key) {
  return std::find(kKeys.begin(), kKeys.end(), key) != kKeys.end();
}

Result<std::map<std::string, std::string>> Settings::ParseConfText(std::string_view text) {
  std::map<std::string, std::string> conf;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (Trim(item).empty()) continue;
    const std::size_t eq = item.find('=');
    const std::string_view key = Trim(item.substr(0, eq));
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view() : Trim(item.substr(eq + 1));
    if (eq == std::string_view::npos || key.empty() || value.empty()) {
      return Status::InvalidArgument("pair " + Quote(item) +
                                     " is not KEY=VALUE (expected 'key=value,key2=value2')");
    }
    conf[std::string(key)] = std::string(value);
  }
  return conf;
}

Status Settings::RefuseUnknownKeys(const std::map<std::string, std::string>& conf) {
  for (const auto& [key, value] : conf) {
    if (IsKey(key)) continue;
    std::string known;
    for (std::string_view k : kKeys) known += (known.empty() ? "" : ", ") + std::string(k);
    return Status::InvalidArgument("--rdzv-conf: unknown key '" + key + "'; known keys: " + known);
  }
  return Status::Ok();
}

Result<Settings> Settings::FromConf(const std::map<std::string, std::string>& conf) {
  Settings s;
  bool heartbeat_given = false;
  bool fence_given = false;
  bool connect_given = false;
  bool failover_given = false;
  for (const auto& [key, value] : conf) {
    Duration* target = nullptr;
    if (key == "join_timeout") target = &s.join_timeout;
    if (key == "read_timeout") target = &s.read_timeout;
    if (key == "last_call_timeout") target = &s.last_call_timeout;
    if (key == "close_timeout") target = &s.close_timeout;
    if (key == "keep_alive_interval") target = &s.keep_alive_interval;
    if (key == "heartbeat_timeout") target = &s.heartbeat_timeout, heartbeat_given = true;
    if (key == "disconnect_grace") target = &s.disconnect_grace;
    if (key == "fence_timeout") target = &s.fence_timeout, fence_given = true;
    if (key == "drain_timeout") target = &s.drain_timeout;
    if (key == "hello_timeout") target = &s.hello_timeout;
    if (key == "idle_timeout") target = &s.idle_timeout;
    if (key == "connect_timeout") target = &s.connect_timeout, connect_given = true;
    if (key == "failover_timeout") target = &s.failover_timeout, failover_given = true;
    if (key == "straggler_window") target = &s.straggler_window;
    if (target) {
      auto parsed = ParseSeconds(key, value);
      if (!parsed.ok()) return parsed.status();
      *target = *parsed;
    } else if (key == "keep_alive_max_attempt") {
      char* end = nullptr;
      const long n = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || n < 1 || n > 1000) {
        return BadValue(key, value, "an integer from 1 to 1000");
      }
      s.keep_alive_max_attempt = static_cast<int>(n);
    } else if (key == "straggler_fraction") {
      errno = 0;
      char* end = nullptr;
      const double fraction = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || errno != 0 || !std::isfinite(fraction) ||
          fraction <= 0 || fraction > 1) {
        return BadValue(key, value, "a number above 0 and at most 1 (of the median step rate)");
      }
      s.straggler_fraction = fraction;
    }
  }
  if (!heartbeat_given && s.keep_alive_max_attempt > 0) {
    s.heartbeat_timeout = s.keep_alive_interval * s.keep_alive_max_attempt;
  }
  if (!fence_given) s.fence_timeout = s.heartbeat_timeout * 4 / 5;
  if (!connect_given) s.connect_timeout = s.keep_alive_interval * 4;
  if (!failover_given) s.failover_timeout = s.fence_timeout + kLeaseAllowance;
  // A member's heartbeats are its connection's only traffic: an idle bound
  // inside heartbeat_timeout would close live agents.
  if (s.idle_timeout <= s.heartbeat_timeout) {
    return OrderRefusal("idle_timeout", s.idle_timeout, "longer", "heartbeat_timeout",
                        s.heartbeat_timeout);
  }
  if (s.heartbeat_timeout <= s.keep_alive_interval) {
    return OrderRefusal("heartbeat_timeout", s.heartbeat_timeout, "longer", "keep_alive_interval",
                        s.keep_alive_interval);
  }
  // An agent must stop its workers before the daemon gives its place away,
  // or two generations could run at once.
  if (s.fence_timeout >= s.heartbeat_timeout) {
    return OrderRefusal("fence_timeout", s.fence_timeout, "shorter", "heartbeat_timeout",
                        s.heartbeat_timeout);
  }
  // Replicas answering buys time beyond the plain fence, never less.
  if (s.failover_timeout <= s.fence_timeout) {
    return OrderRefusal("failover_timeout", s.failover_timeout, "longer", "fence_timeout",
                        s.fence_timeout);
  }
  return s;
}

std::string SecondsText(Duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", static_cast<double>(d.count()) / 1000.0);
  return text;
}

}  // namespace muster::rdzv
