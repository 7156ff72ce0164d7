// NodeAssignment: what a rendezvous round tells one node's agent about its
// place in the job. Every worker's environment is derived from it.
#pragma once

#include <cstdint>
#include <string>

namespace muster {

struct NodeAssignment {
  uint64_t generation = 0;     // round number; fences stale state
  int group_rank = 0;          // this node's rank among nodes; 0 is the master node
  int group_world_size = 1;    // number of nodes in the round
  int local_world_size = 1;    // workers on this node
  int global_rank_offset = 0;  // global rank of this node's local rank 0
  int world_size = 1;          // workers in the whole job
  std::string master_addr;     // where workers reach the store
  int master_port = 0;         // 0 until the master node's agent has bound the store
  bool hosts_store = false;    // this node's agent serves the worker store
};

}  // namespace muster
