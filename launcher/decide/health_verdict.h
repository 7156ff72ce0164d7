// HealthVerdict: whether this agent is alive, as the answer of its health
// endpoint (--health-port, TORCHELASTIC_HEALTH_CHECK_PORT) says it; a pure
// function of when things last happened and `now`, so every rule is a row
// of a table test (tests/unit/launcher_health_verdict_test.cc).
//
// The rules, in order:
//   1. the monitor loop has not ticked for longer than tick_limit
//        -> unhealthy: the agent's one thread stalls, and nothing it watches
//           (workers, signals, the rendezvous) is being looked at;
//   2. elastic runs, once the rendezvous first answered: no message from it
//      (a heartbeat's answer, a waiting reply, an assignment) for longer than
//      contact_limit
//        -> unhealthy: this agent has lost the rendezvous; it fences its
//           workers after the same silence (rendezvous/client/fence_rule.h);
//   3. otherwise healthy. Before the rendezvous first answers, contact is not
//      judged: the client's own first-contact wait ends the agent when it
//      runs out (client_machine.h, kFirstContact).
// Static runs (no rendezvous) are judged by rule 1 alone.
//
// The agent serves the endpoint on its own thread, the one that ticks: a
// loop that stalls cannot answer at all, and a probe that times out is a
// failure to Kubernetes too. Rule 1 speaks when the loop comes back from a
// stall before its tick does.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/clock.h"

namespace muster {

struct HealthLimits {
  // How often the loop ticks, and the silence after which it counts as
  // stalled.
  std::chrono::milliseconds tick_period{100};
  std::chrono::milliseconds tick_limit{5'000};
  // The rendezvous' silence after which contact counts as lost; nullopt:
  // no rendezvous is judged (static runs).
  std::optional<std::chrono::milliseconds> contact_limit;
};

// The limits for a run whose --monitor-interval is `monitor_interval_s`
// (> 0) and, when elastic, whose agent fences its workers after a silence
// of `contact_limit` (fence_timeout; failover_timeout with replicas): the
// loop ticks once per monitor interval (at least kMinTickPeriod apart), and
// is stalled after kStalledTicks of them or kMinTickLimit, whichever is
// longer; contact is lost after contact_limit (nullopt: a static run).
inline constexpr std::chrono::milliseconds kMinTickPeriod{50};
inline constexpr int kStalledTicks = 5;
inline constexpr std::chrono::milliseconds kMinTickLimit{5'000};
HealthLimits HealthLimitsFor(double monitor_interval_s,
                             std::optional<std::chrono::milliseconds> contact_limit);

// When things last happened, as the agent recorded them.
struct HealthRecord {
  Time last_tick;                    // the monitor loop's last tick (its start, before any)
  std::optional<Time> last_contact;  // the rendezvous' last message; nullopt: none yet
};

struct HealthVerdict {
  bool healthy = true;
  // "ok", "waiting for the rendezvous' first answer", or why not, e.g.
  // "no answer from the rendezvous for 3200 ms (limit 1000 ms)".
  std::string reason;
};

HealthVerdict JudgeHealth(const HealthLimits& limits, const HealthRecord& record, Time now);

}  // namespace muster
