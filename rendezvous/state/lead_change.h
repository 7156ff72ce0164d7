// LeadChange: what a replica's daemon does when its role changes. Pure: the
// shell hands it the status the election published (or the one it had,
// when a lead runs out between two publications) and the time, and carries
// out the outcome: on a change of lead it closes every connection and
// starts a new RendezvousCore with `settings` and `takeover`.
//
//   - A lead whose deadline has passed at `now` is no lead
//     (TakeStatus demotes it to standby): one that arrives late from the
//     election thread, or one that ran out here.
//   - Taking the lead: the core holds its rebuild for TakeoverHold
//     (takeover_hold.h) and starts from the run records the election read.
//   - A leader gives a silent member's ranks away only after
//     failover_timeout + keep_alive_interval (LeaderSettings): an agent that
//     hears a standby keeps its workers up to failover_timeout after it last
//     heard this leader (fence_rule.h), which may be up to a heartbeat later
//     than this leader last heard it.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>

#include "common/clock.h"
#include "rendezvous/state/replica_status.h"
#include "rendezvous/state/run_record.h"
#include "rendezvous/state/settings.h"

namespace muster::rdzv {

// `configured` as a leader's core runs it: heartbeat_timeout at least
// failover_timeout + keep_alive_interval.
Settings LeaderSettings(const Settings& configured);

// `status` as the daemon takes it at `now`: a lead that has passed is
// demoted to a standby's.
ReplicaStatus TakeStatus(ReplicaStatus status, Time now);

// The status a leader whose lease ran out at `now` (before the election
// said so) holds until it reads etcd again: not leading, and nobody known
// to lead. nullopt while `current` still serves, or does not lead.
std::optional<ReplicaStatus> LapsedLead(const ReplicaStatus& current, Time now);

// A change of lead: every connection closes with `why`, every run is
// forgotten, and a new core starts from `settings` and `takeover`.
struct LeadChange {
  std::string why;
  Settings settings;
  Takeover takeover;
};

// The change from `before` to `after` (as TakeStatus returned it) at `now`,
// or nullopt when the lead did not change. `why_not_leading` says why a lead
// was lost.
std::optional<LeadChange> DecideLeadChange(const ReplicaStatus& before, const ReplicaStatus& after,
                                           const Settings& configured, Time now,
                                           const std::string& why_not_leading);

}  // namespace muster::rdzv
