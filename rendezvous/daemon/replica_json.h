// The "replica" object of both status documents (status_json.h, what
// `muster status` reads; status_page_json.h, the page's): self, role, epoch,
// leader, and the standbys (every registered replica but the leader).
//
// Thread-safety: a pure function.
#pragma once

#include <nlohmann/json.hpp>

#include "rendezvous/state/status_snapshot.h"

namespace muster::rdzv {

nlohmann::json ReplicaJson(const ReplicaSummary& replica);

}  // namespace muster::rdzv
