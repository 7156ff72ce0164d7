// RunRecord: what a replicated rendezvous keeps of a run in etcd, so that a
// new leader resumes its budgets and settings (PROTOCOL.md, "Replicas"):
// the generation numbers already handed out, the restarts used, and the
// run's settings. The leader writes it when it changes; a replica that takes
// the lead reads every record and seeds its runs from them (RunState).
//
// Values only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "common/clock.h"

namespace muster::rdzv {

struct RunRecord {
  std::string run_id;
  uint64_t generation = 0;  // the highest generation handed out
  int restart_count = 0;
  int max_restarts = 0;
  int min_nodes = 0;
  int max_nodes = 0;
  bool ended = false;  // over: a later run may reuse the id, and starts afresh
  bool operator==(const RunRecord&) const = default;
};

// What a replica that takes the lead starts from.
struct Takeover {
  // Rebuilds wait for the last generation's members until then
  // (RunState); nullopt: close_timeout, as after a daemon restart.
  std::optional<Time> rebuild_hold_until;
  // The runs' records by run id, as etcd held them.
  std::map<std::string, RunRecord, std::less<>> records;
  bool operator==(const Takeover&) const = default;
};

}  // namespace muster::rdzv
