// TakeoverHold: how long a replica that takes the lead holds every run's
// rebuild, so that no generation it forms overlaps the workers of an agent
// that has not come back to it (PROTOCOL.md, "Why no generation forms behind
// a kept worker"). Pure.
//
// An agent that is not back keeps its workers only while (fence_rule.h):
//   - it heard a leader within failover_timeout: the old leader, which
//     stopped serving at least `lead_margin` before this one leads; or
//   - a replica answered within fence_timeout with evidence that predates
//     this leader: the old leader closing its connection (before the lead
//     margin), or a *current* standby answer (Error.current) naming no
//     leader or the one that served the agent, which was read from etcd
//     before this leader's key existed and sent less than
//     kStandbyViewCurrentFor after that read.
// So every such agent has fenced by the lesser of failover_timeout −
// lead_margin and fence_timeout + kStandbyViewCurrentFor after the lead,
// plus the answer's flight and the agent's timer (kHoldSlack).
#pragma once

#include <algorithm>
#include <chrono>

#include "rendezvous/state/settings.h"

namespace muster::rdzv {

// A standby's answer is current while its view of the leader was read from
// etcd (the read's send time) at most this long before: standbys read it every
// 100 ms, so a healthy one is always current.
inline constexpr std::chrono::milliseconds kStandbyViewCurrentFor{400};
// An answer's time in flight and an agent's fence timer firing late.
inline constexpr std::chrono::milliseconds kHoldSlack{100};

inline std::chrono::milliseconds TakeoverHold(const Settings& settings,
                                              std::chrono::milliseconds lead_margin) {
  return std::min(settings.failover_timeout - lead_margin,
                  settings.fence_timeout + kStandbyViewCurrentFor + kHoldSlack);
}

}  // namespace muster::rdzv
