// Settings: every timeout of the rendezvous, in one place, validated when
// built. Keys follow torchrun's --rdzv-conf names where they exist.
//
//   join_timeout           how long a run may wait for MIN nodes (default 600 s)
//   read_timeout           how long an agent may go without reaching the rendezvous
//                          at all before it gives up (60 s, torchrun's c10d key; the
//                          wait is also bounded by join_timeout)
//   last_call_timeout      after MIN nodes, how long to wait for more, up to MAX (2 s);
//                          also how long a node joining a running job waits to be admitted
//   close_timeout          after a daemon restart, how long to wait for every member of
//                          the last generation to report back (3 s)
//   keep_alive_interval    agent heartbeat period (0.5 s)
//   keep_alive_max_attempt when given (and heartbeat_timeout is not), the silence
//                          that makes a node dead is interval x attempts
//   heartbeat_timeout      silence after which a node is dead (default: interval x attempts)
//   disconnect_grace       a dropped connection may reconnect within this (0.15 s)
//   fence_timeout          an agent that cannot reach the daemon this long stops its
//                          workers unless a peer confirms the daemon is down (0.8 x
//                          heartbeat_timeout)
//   drain_timeout          how long the daemon waits for a generation's agents to
//                          report their workers stopped before it goes on (45 s)
//   hello_timeout          a new connection must say Hello within this (5 s)
//   idle_timeout           the daemon closes a connection silent this long (60 s);
//                          longer than heartbeat_timeout
//   connect_timeout        an agent gives up one connection attempt after this (4 x
//                          keep_alive_interval): a host whose link is down never answers
//   failover_timeout       replicated rendezvous: how long at most an agent keeps its
//                          workers while standbys answer that no new leader took over
//                          (fence_timeout + 2.5 s: etcd's lease and its expiry); a
//                          replicated leader gives a silent member's ranks away only
//                          after it plus keep_alive_interval, and holds its takeover's
//                          rebuild at most as long, less its lead margin
//                          (takeover_hold.h)
//   straggler_fraction     a member whose step rate stays below this fraction of the
//                          run's median is a straggler (0.5; above 0, at most 1)
//   straggler_window       ... for this long without a break (30 s); detection only
//                          (straggler_detector.h, docs/operations.md "Stragglers")
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <string>
#include <string_view>

#include "common/status.h"

namespace muster::rdzv {

using Duration = std::chrono::milliseconds;

struct Settings {
  Duration join_timeout{600'000};
  // torchrun's c10d waits this long for its TCPStore connection.
  Duration read_timeout{60'000};
  Duration last_call_timeout{2'000};
  Duration close_timeout{3'000};
  // Half a second: a silent node is still found within 1.25 s (2.5
  // intervals), and a 10,000-node job costs the daemon half the wake-ups of
  // a 0.25 s interval. The daemon acks every heartbeat at this interval.
  Duration keep_alive_interval{500};
  int keep_alive_max_attempt = 0;  // 0: not given
  Duration heartbeat_timeout{1'250};
  Duration disconnect_grace{150};
  Duration fence_timeout{1'000};
  // Stop orders are carried out within --shutdown-timeout (30 s by default);
  // a gone agent is found by heartbeat_timeout. This bound is only for an
  // agent that heartbeats but never reports.
  Duration drain_timeout{45'000};
  Duration hello_timeout{5'000};
  Duration idle_timeout{60'000};
  Duration connect_timeout{2'000};
  // fence_timeout plus the leader's lease and etcd's time to expire it: an
  // agent that last heard the old leader just before it died reaches the
  // new one inside it (PROTOCOL.md, "Replicas").
  Duration failover_timeout{3'500};
  // Stragglers (straggler_detector.h): below this fraction of the median
  // step rate, for this long.
  double straggler_fraction = 0.5;
  Duration straggler_window{30'000};

  // The keys FromConf() reads.
  static constexpr std::array<std::string_view, 16> kKeys = {
      "join_timeout",        "read_timeout",           "last_call_timeout",  "close_timeout",
      "keep_alive_interval", "keep_alive_max_attempt", "heartbeat_timeout",  "disconnect_grace",
      "fence_timeout",       "drain_timeout",          "hello_timeout",      "idle_timeout",
      "connect_timeout",     "failover_timeout",       "straggler_fraction", "straggler_window",
  };
  static bool IsKey(std::string_view key);

  // The one parser of --rdzv-conf text, muster's and musterd's: "k=v,k2=v2",
  // keys and values trimmed of spaces, both non-empty, empty items skipped,
  // a repeated key keeps its last value (torchrun's rules). The error quotes
  // the malformed pair. Keys are not checked here (FromConf,
  // RefuseUnknownKeys).
  static Result<std::map<std::string, std::string>> ParseConfText(std::string_view text);

  // Reads the known keys of `conf` (values in seconds, decimals allowed);
  // other keys (is_host, ...) are the caller's. Errors quote key and value,
  // e.g. "--rdzv-conf: join_timeout='-1' must be a positive number of seconds".
  static Result<Settings> FromConf(const std::map<std::string, std::string>& conf);

  // For a caller that has no keys of its own (musterd): InvalidArgument
  // naming the first key of `conf` that is not in kKeys and listing them, e.g.
  // "--rdzv-conf: unknown key 'heartbeat_timout'; known keys: join_timeout, ...".
  // OK when every key is known.
  static Status RefuseUnknownKeys(const std::map<std::string, std::string>& conf);

  bool operator==(const Settings&) const = default;
};

// A duration as --rdzv-conf writes it, in seconds: "600", "0.5", "2.8".
std::string SecondsText(Duration d);

}  // namespace muster::rdzv
