// StatusJson: the status document (PROTOCOL.md, "Status") of a snapshot, the
// JSON that a StatusReply carries and `muster status` reads:
//
//   {"runs":[{"generation":1,"max_nodes":3,"max_restarts":0,"min_nodes":2,
//             "nodes":[{"connected":true,"global_ranks":[0,1],"group_rank":0,
//                       "heartbeat_age_ms":40,"host":"h0","local_world_size":2,
//                       "node_id":"n0","state":"member"}, ...],
//             "restart_count":0,"run_id":"job","state":"running"}]}
//
// Keys in byte order; a waiting node has no group_rank or global_ranks, a run
// not ended no result or message. Progress, once workers report it: steps
// per second and straggler flags, and progress_json.h's compute times, slow
// ranks and goodput. A string that is not UTF-8 (the codec lets
// none in) is written with U+FFFD in place of the bad bytes. Never throws
// except std::bad_alloc.
#pragma once

#include <string>

#include "rendezvous/state/status_snapshot.h"

namespace muster::rdzv {

std::string StatusJson(const StatusSnapshot& snapshot);

}  // namespace muster::rdzv
