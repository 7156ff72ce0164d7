// ReplicaStatus: what a musterd replica of a replicated rendezvous knows of
// its own role, as the election (rendezvous/replica/replica_node.h) tells the
// server. An unreplicated daemon has replicated == false and always serves.
//
// A replica serves agents only while it leads and its lease allows it
// (now < lead_until); otherwise it answers every Hello with `not_leader`
// (naming the leader it knows and its epoch) or `no_leader`, and closes
// (hello_gate.h).
//
// Thread-safety: a value.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "rendezvous/state/role.h"
#include "rendezvous/state/run_record.h"

namespace muster::rdzv {

struct ReplicaStatus {
  bool replicated = false;
  bool leading = false;
  Time lead_until{};   // leading: act only before it
  uint64_t epoch = 0;  // the leader's epoch (this replica's when leading); 0: none known
  std::string leader;  // the leader's advertised HOST:PORT; empty: none known
  bool fresh = false;  // the view of the leader was read from etcd within the lease TTL
  // When that view was read (the read's send time): a standby's answer is
  // current while it is recent (rendezvous/state/takeover_hold.h).
  Time view_read_at{};
  replica::Role role = replica::Role::kStandalone;
  std::string self;  // this replica's advertised HOST:PORT
  // How long before its lease can expire a leader stops serving: a new
  // leader knows every agent last heard the old one at least this long ago.
  std::chrono::milliseconds lead_margin{0};
  // Every replica registered in etcd (its advertised HOST:PORT), sorted.
  std::vector<std::string> replicas;
  // Leading: the runs' records as etcd held them when it took the lead.
  std::map<std::string, RunRecord, std::less<>> run_records;

  bool Serves(Time now) const { return !replicated || (leading && now < lead_until); }
  bool operator==(const ReplicaStatus&) const = default;
};

}  // namespace muster::rdzv
