#include "launcher/rendezvous_handler.h"

namespace muster {

StaticRendezvous::StaticRendezvous(int num_nodes, int node_rank, std::string master_addr,
                                   int master_port)
    : num_nodes_(num_nodes),
      node_rank_(node_rank),
      master_addr_(std::move(master_addr)),
      master_port_(master_port) {}

Result<NodeAssignment> StaticRendezvous::NextRound(int local_world_size) {
  if (node_rank_ < 0 || node_rank_ >= num_nodes_) {
    return Status::InvalidArgument("--node-rank: '" + std::to_string(node_rank_) +
                                   "' must be in [0, " + std::to_string(num_nodes_) + ")");
  }
  // Other nodes can only find a port they were told; an ephemeral port works
  // only when every worker is local.
  if (num_nodes_ > 1 && master_port_ == 0) {
    return Status::InvalidArgument(
        "--master-port: '0' needs a fixed port when --nnodes is greater than 1");
  }
  NodeAssignment a;
  a.generation = rounds_++;
  a.group_rank = node_rank_;
  a.group_world_size = num_nodes_;
  a.local_world_size = local_world_size;
  // Static membership assumes every node runs the same number of workers.
  a.global_rank_offset = node_rank_ * local_world_size;
  a.world_size = num_nodes_ * local_world_size;
  a.master_addr = master_addr_;
  a.master_port = master_port_;
  a.hosts_store = node_rank_ == 0;
  return a;
}

std::string StaticRendezvous::Describe() const {
  return "static nnodes=" + std::to_string(num_nodes_) +
         " node_rank=" + std::to_string(node_rank_) + " master=" + master_addr_ + ":" +
         std::to_string(master_port_);
}

}  // namespace muster
