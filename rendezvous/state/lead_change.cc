#include "rendezvous/state/lead_change.h"

#include <algorithm>

#include "rendezvous/state/takeover_hold.h"

namespace muster::rdzv {

Settings LeaderSettings(const Settings& configured) {
  Settings settings = configured;
  settings.heartbeat_timeout = std::max(settings.heartbeat_timeout,
                                        settings.failover_timeout + settings.keep_alive_interval);
  return settings;
}

ReplicaStatus TakeStatus(ReplicaStatus status, Time now) {
  if (status.leading && !status.Serves(now)) {
    status.leading = false;
    status.role = replica::Role::kStandby;
  }
  return status;
}

std::optional<ReplicaStatus> LapsedLead(const ReplicaStatus& current, Time now) {
  if (!current.leading || current.Serves(now)) return std::nullopt;
  // The election thread steps down at the same moment; this does not wait
  // for it to say so.
  ReplicaStatus lapsed = current;
  lapsed.leader.clear();
  lapsed.fresh = false;
  return lapsed;
}

std::optional<LeadChange> DecideLeadChange(const ReplicaStatus& before, const ReplicaStatus& after,
                                           const Settings& configured, Time now,
                                           const std::string& why_not_leading) {
  if (after.leading == before.leading) return std::nullopt;
  if (!after.leading) return LeadChange{why_not_leading, configured, Takeover{}};
  // By then an agent that has not come back has fenced itself.
  Takeover takeover;
  takeover.rebuild_hold_until = now + TakeoverHold(configured, after.lead_margin);
  takeover.records = after.run_records;
  return LeadChange{"this replica took the lead (epoch " + std::to_string(after.epoch) + ")",
                    LeaderSettings(configured), std::move(takeover)};
}

}  // namespace muster::rdzv
