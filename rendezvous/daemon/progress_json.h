// The training-progress parts of both status documents (status_json.h, what
// `muster status` reads; status_page_json.h, the page's):
//   - a node's "compute_ms" (by local rank, null where unknown) and
//     "slow_ranks";
//   - a run's "median_compute_ms", "slow_ranks" ([{rank, node_id, host,
//     compute_ms}], by rank) and "goodput" ({ratio, wall_s, productive_s,
//     to_first_step_s, downtime_s, redone_s, tail_s, generations}).
// Absent values are left out; "slow_ranks" too while no rank reports a
// compute time.
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include "rendezvous/state/status_snapshot.h"

namespace muster::rdzv {

void AddNodeProgress(const NodeStatus& node, nlohmann::json& out);
void AddRunProgress(const RunStatus& run, nlohmann::json& out);

}  // namespace muster::rdzv
